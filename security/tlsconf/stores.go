package tlsconf

import (
	"bytes"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// The formats of keystores and truststores, as the values of
// security.ssl.*.keystore-type and truststore-type name them.
const (
	FormatPEM    = "pem"
	FormatJKS    = "jks"
	FormatPKCS12 = "pkcs12"
)

var (
	// ErrUnknownFormat is wrapped by the FileError of a file that is none
	// of PEM, JKS and PKCS12.
	ErrUnknownFormat = errors.New("neither PEM, nor a JKS nor a PKCS12 keystore")
	// ErrFormat is wrapped by the FileError of a file whose content is not
	// of the format its type option names.
	ErrFormat = errors.New("the file is not of the configured type")
	// ErrStorePassword is wrapped by the FileError of a JKS or PKCS12 file
	// whose integrity the configured password does not verify (a wrong
	// password), or of a JKS file read without one.
	ErrStorePassword = errors.New("the keystore password is wrong")
	// ErrNoPrivateKey is wrapped by the FileError of a keystore that holds
	// certificates but no private key.
	ErrNoPrivateKey = errors.New("the keystore holds no private key")
)

// SeveralKeysError is a keystore holding more than one private key: Flink
// has no option choosing one by alias, so neither does Sluice.
type SeveralKeysError struct {
	// Aliases of the keys, sorted; empty when the file does not say (a
	// PKCS12 file whose keys are encrypted with its certificates).
	Aliases []string
}

func (e *SeveralKeysError) Error() string {
	if len(e.Aliases) == 0 {
		return "the keystore holds several private keys and there is no option to choose one: keep one key in it"
	}
	return fmt.Sprintf("the keystore holds %d private keys (aliases %s) and there is no option to choose one: keep one key in it "+
		"(e.g. keytool -delete -alias ALIAS)", len(e.Aliases), strings.Join(e.Aliases, ", "))
}

// detectFormat tells a keystore's format from its content: PEM text, a
// JKS file (magic 0xFEEDFEED), or a PKCS12 PFX (a DER sequence starting
// with version 3). Anything else, a JCEKS keystore or a DER certificate
// among them, is an error saying what it is.
func detectFormat(b []byte) (string, error) {
	switch {
	case bytes.Contains(b, []byte("-----BEGIN ")):
		if blk, _ := pem.Decode(b); blk != nil {
			return FormatPEM, nil
		}
		return "", fmt.Errorf("%w: it has a PEM header but no PEM block", ErrUnknownFormat)
	case bytes.HasPrefix(b, []byte{0xfe, 0xed, 0xfe, 0xed}):
		return FormatJKS, nil
	case bytes.HasPrefix(b, []byte{0xce, 0xce, 0xce, 0xce}):
		return "", fmt.Errorf("%w: a JCEKS keystore, which is not read (convert it: keytool -importkeystore -srcstoretype JCEKS "+
			"-deststoretype PKCS12 -destkeystore ks.p12)", ErrUnknownFormat)
	}
	var pfx pfxPDU
	if rest, err := asn1.Unmarshal(b, &pfx); err == nil && len(rest) == 0 && pfx.Version == 3 {
		return FormatPKCS12, nil
	}
	if _, err := x509.ParseCertificate(b); err == nil {
		return "", fmt.Errorf("%w: a DER certificate (convert it to PEM: openssl x509 -inform der -in cert.der -out cert.pem)", ErrUnknownFormat)
	}
	return "", ErrUnknownFormat
}

// format is the format to read b as: the content's, checked against the
// type option's value when it is set. As Java's keystore.type.compat
// (the default since Java 9), "jks" and "pkcs12" each read either binary
// format: a Flink configuration saying pkcs12 (the JVM's default) of a
// JKS file works as in Flink.
func format(b []byte, typ, typeKey string) (string, error) {
	got, err := detectFormat(b)
	if err != nil {
		return "", err
	}
	if typ == "" || typ == got || (typ != FormatPEM && got != FormatPEM) {
		return got, nil
	}
	return "", fmt.Errorf("%w: %s is %s, but the file is %s", ErrFormat, typeKey, typ, describeFormat(got))
}

func describeFormat(f string) string {
	switch f {
	case FormatPEM:
		return "PEM"
	case FormatJKS:
		return "a JKS keystore"
	}
	return "a PKCS12 keystore"
}

// pfxPDU is the outer structure of a PKCS12 file (RFC 7292).
type pfxPDU struct {
	Version  int
	AuthSafe contentInfo
	MacData  asn1.RawValue `asn1:"optional"`
}

type contentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"tag:0,explicit,optional"`
}

type safeBag struct {
	ID         asn1.ObjectIdentifier
	Value      asn1.RawValue  `asn1:"tag:0,explicit"`
	Attributes []bagAttribute `asn1:"set,optional"`
}

type bagAttribute struct {
	ID     asn1.ObjectIdentifier
	Values asn1.RawValue `asn1:"set"`
}

var (
	oidData                = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidKeyBag              = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 1}
	oidPKCS8ShroudedKeyBag = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 2}
	oidFriendlyName        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 20}
)

// pkcs12KeyAliases are the friendly names (Java's aliases) of the private
// keys in b's unencrypted safes, where keytool and openssl put them (the
// keys themselves are encrypted in their bags; their names are not), and
// how many keys those safes hold. A file that cannot be walked yields
// none: reading it then says what is wrong.
func pkcs12KeyAliases(b []byte) (aliases []string, keys int) {
	var pfx pfxPDU
	if _, err := asn1.Unmarshal(b, &pfx); err != nil || !pfx.AuthSafe.ContentType.Equal(oidData) {
		return nil, 0
	}
	var authSafe []byte
	if _, err := asn1.Unmarshal(pfx.AuthSafe.Content.Bytes, &authSafe); err != nil {
		return nil, 0
	}
	var safes []contentInfo
	if _, err := asn1.Unmarshal(authSafe, &safes); err != nil {
		return nil, 0
	}
	for _, ci := range safes {
		if !ci.ContentType.Equal(oidData) {
			continue // encrypted: certificates, as keytool writes them
		}
		var data []byte
		if _, err := asn1.Unmarshal(ci.Content.Bytes, &data); err != nil {
			continue
		}
		var bags []safeBag
		if _, err := asn1.Unmarshal(data, &bags); err != nil {
			continue
		}
		for _, bag := range bags {
			if !bag.ID.Equal(oidKeyBag) && !bag.ID.Equal(oidPKCS8ShroudedKeyBag) {
				continue
			}
			keys++
			for _, a := range bag.Attributes {
				var name asn1.RawValue
				if !a.ID.Equal(oidFriendlyName) {
					continue
				}
				if _, err := asn1.Unmarshal(a.Values.Bytes, &name); err == nil && name.Tag == asn1.TagBMPString && len(name.Bytes)%2 == 0 {
					u := make([]uint16, len(name.Bytes)/2)
					for i := range u {
						u[i] = uint16(name.Bytes[2*i])<<8 | uint16(name.Bytes[2*i+1])
					}
					aliases = append(aliases, string(utf16.Decode(u)))
				}
			}
		}
	}
	slices.Sort(aliases)
	return aliases, keys
}

// pkcs12Keystore reads the one private key of a PKCS12 file and its
// certificate chain. PKCS12 has one password for the file and its key
// (keytool sets both to -storepass).
func pkcs12Keystore(b []byte, password string) (tls.Certificate, error) {
	if aliases, keys := pkcs12KeyAliases(b); keys > 1 {
		return tls.Certificate{}, &SeveralKeysError{Aliases: aliases}
	}
	key, leaf, others, err := pkcs12.DecodeChain(b, password)
	if err != nil {
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			return tls.Certificate{}, ErrStorePassword
		}
		if certs, terr := pkcs12.DecodeTrustStore(b, password); terr == nil {
			return tls.Certificate{}, fmt.Errorf("%w: it holds %d trusted certificates (a truststore)", ErrNoPrivateKey, len(certs))
		}
		return tls.Certificate{}, fmt.Errorf("reading PKCS12: %w", err)
	}
	return keyPair(key, append([]*x509.Certificate{leaf}, others...))
}

// pkcs12Truststore reads the certificates a PKCS12 truststore trusts: its
// trusted certificate entries, or, of a keystore used as a truststore (as
// Flink's documentation does for internal SSL), the certificate of its key
// entry, as Java's trust managers take a key entry.
func pkcs12Truststore(b []byte, password string) ([]*x509.Certificate, error) {
	certs, err := pkcs12.DecodeTrustStore(b, password)
	if err == nil {
		return certs, nil
	}
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return nil, ErrStorePassword
	}
	if aliases, keys := pkcs12KeyAliases(b); keys > 1 {
		return nil, &SeveralKeysError{Aliases: aliases}
	}
	key, leaf, others, kerr := pkcs12.DecodeChain(b, password)
	if kerr != nil {
		if errors.Is(kerr, pkcs12.ErrIncorrectPassword) {
			return nil, ErrStorePassword
		}
		return nil, fmt.Errorf("reading PKCS12 (neither trusted certificates nor a key entry): %w", kerr)
	}
	cert, err := keyPair(key, append([]*x509.Certificate{leaf}, others...))
	if err != nil {
		return nil, err
	}
	return []*x509.Certificate{cert.Leaf}, nil
}

// jksIntegrity checks a JKS file's keyed SHA-1 digest, as Java's
// KeyStore.load does with the store's password: a wrong password is
// ErrStorePassword, told apart from a damaged file.
func jksIntegrity(b []byte, password string) error {
	if len(b) < 4+4+4+sha1.Size {
		return errors.New("a JKS file too short to hold its digest")
	}
	body, digest := b[:len(b)-sha1.Size], b[len(b)-sha1.Size:]
	h := sha1.New()
	for _, c := range utf16.Encode([]rune(password)) { // Java's chars, big-endian
		h.Write([]byte{byte(c >> 8), byte(c)})
	}
	h.Write([]byte("Mighty Aphrodite"))
	h.Write(body)
	if !bytes.Equal(h.Sum(nil), digest) {
		return ErrStorePassword
	}
	return nil
}

// loadJKS checks the file's integrity with password and parses it.
func loadJKS(b []byte, password string) (jks.KeyStore, error) {
	if err := jksIntegrity(b, password); err != nil {
		return jks.KeyStore{}, err
	}
	ks := jks.New(jks.WithOrderedAliases(), jks.WithCaseExactAliases())
	if err := ks.Load(bytes.NewReader(b), []byte(password)); err != nil {
		return jks.KeyStore{}, fmt.Errorf("reading JKS: %w", err)
	}
	return ks, nil
}

// jksKeystore reads the one private key entry of a JKS file, decrypting
// it with keyPassword (keyPasswordKey names the option it came from).
func jksKeystore(b []byte, storePassword, keyPassword, keyPasswordKey string) (tls.Certificate, error) {
	ks, err := loadJKS(b, storePassword)
	if err != nil {
		return tls.Certificate{}, err
	}
	var keys []string
	for _, a := range ks.Aliases() {
		if ks.IsPrivateKeyEntry(a) {
			keys = append(keys, a)
		}
	}
	switch len(keys) {
	case 0:
		return tls.Certificate{}, fmt.Errorf("%w: it holds %d trusted certificates (a truststore)", ErrNoPrivateKey, len(ks.Aliases()))
	case 1:
	default:
		return tls.Certificate{}, &SeveralKeysError{Aliases: keys}
	}
	e, err := ks.GetPrivateKeyEntry(keys[0], []byte(keyPassword))
	if err != nil {
		// The file's integrity is checked: the key's own check failed.
		return tls.Certificate{}, fmt.Errorf("%w and %s does not decrypt the key %q: %v", ErrKeyPassword, keyPasswordKey, keys[0], err)
	}
	key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("the key %q: %w", keys[0], err)
	}
	chain, err := jksCerts(e.CertificateChain)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("the key %q: %w", keys[0], err)
	}
	return keyPair(key, chain)
}

// jksTruststore reads the certificates a JKS truststore trusts, as Java's
// trust managers do: every trusted certificate entry and the certificate
// of every key entry.
func jksTruststore(b []byte, password string) ([]*x509.Certificate, error) {
	ks, err := loadJKS(b, password)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, a := range ks.Aliases() {
		var c []jks.Certificate
		if e, err := ks.GetTrustedCertificateEntry(a); err == nil {
			c = []jks.Certificate{e.Certificate}
		} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(a); err == nil && len(chain) > 0 {
			c = chain[:1]
		}
		parsed, err := jksCerts(c)
		if err != nil {
			return nil, fmt.Errorf("the entry %q: %w", a, err)
		}
		certs = append(certs, parsed...)
	}
	return certs, nil
}

func jksCerts(cs []jks.Certificate) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, c := range cs {
		if c.Type != "X.509" && c.Type != "X509" {
			return nil, fmt.Errorf("a certificate of type %q, not X.509", c.Type)
		}
		x, err := x509.ParseCertificate(c.Content)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// keyPair is the tls.Certificate of key with its certificate chain: the
// certificate of key first, then its issuers among certs, in order (a
// PKCS12 file need not list them so, and may hold others too).
func keyPair(key any, certs []*x509.Certificate) (tls.Certificate, error) {
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("the private key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})
	// The leaf is the certificate tls.X509KeyPair accepts for the key.
	for i, leaf := range certs {
		cert, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), keyPEM)
		if err != nil {
			continue
		}
		rest := slices.Delete(slices.Clone(certs), i, i+1)
		for cur := leaf; !bytes.Equal(cur.RawIssuer, cur.RawSubject); {
			j := slices.IndexFunc(rest, func(c *x509.Certificate) bool { return cur.CheckSignatureFrom(c) == nil })
			if j < 0 {
				break
			}
			cur = rest[j]
			cert.Certificate = append(cert.Certificate, cur.Raw)
			rest = slices.Delete(rest, j, j+1)
		}
		cert.Leaf = leaf
		return cert, nil
	}
	return tls.Certificate{}, fmt.Errorf("none of its %d certificates is the private key's", len(certs))
}

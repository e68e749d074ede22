// Package keytooltest makes keystores and truststores with the JDK's
// keytool, as a Flink user does, for the tests that Sluice reads them
// (security/tlsconf, cluster/clustertest). Its tests run under -tags
// integration, where a missing keytool fails them: CI installs the JDK the
// mini YARN cluster needs, which has it.
package keytooltest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Tool writes keystores made by keytool into a directory.
type Tool struct {
	t   testing.TB
	bin string
	dir string
}

// New finds keytool ($JAVA_HOME/bin/keytool, else on PATH) and fails t
// when there is none.
func New(t testing.TB, dir string) *Tool {
	t.Helper()
	bin := ""
	if h := os.Getenv("JAVA_HOME"); h != "" {
		if p := filepath.Join(h, "bin", "keytool"); isExecutable(p) {
			bin = p
		}
	}
	if bin == "" {
		p, err := exec.LookPath("keytool")
		if err != nil {
			t.Fatal("keytool is missing: install a JDK 17 (apt-get install openjdk-17-jdk-headless) or set JAVA_HOME")
		}
		bin = p
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &Tool{t: t, bin: bin, dir: dir}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Path is the path of a file of the tool's directory.
func (k *Tool) Path(name string) string { return filepath.Join(k.dir, name) }

// Run runs keytool with args in the tool's directory, failing the test
// with its output when it fails.
func (k *Tool) Run(args ...string) {
	k.t.Helper()
	cmd := exec.Command(k.bin, args...)
	cmd.Dir = k.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		k.t.Fatalf("keytool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Store is a keystore or truststore keytool wrote.
type Store struct {
	// Path of the file; Type its -storetype (JKS or PKCS12).
	Path, Type string
	// StorePassword is its -storepass; KeyPassword its key's -keypass
	// (for PKCS12, keytool makes it the store's).
	StorePassword, KeyPassword string
}

// CA is a certificate authority made by keytool.
type CA struct {
	Store
	// CertPEM is the file of its certificate (keytool -exportcert -rfc).
	CertPEM string
	alias   string
}

// NewCA makes a CA (a key pair whose certificate has basic constraints
// CA:true) in a PKCS12 keystore.
func (k *Tool) NewCA(name string) *CA {
	k.t.Helper()
	ca := &CA{Store: Store{Path: k.Path(name + ".p12"), Type: "PKCS12", StorePassword: name + "-ca-pass", KeyPassword: name + "-ca-pass"},
		CertPEM: k.Path(name + ".pem"), alias: name}
	k.Run("-genkeypair", "-alias", name, "-dname", "CN="+name, "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
		"-ext", "bc:c", "-storetype", "PKCS12", "-keystore", ca.Path, "-storepass", ca.StorePassword)
	k.Run("-exportcert", "-rfc", "-alias", name, "-keystore", ca.Path, "-storepass", ca.StorePassword, "-file", ca.CertPEM)
	return ca
}

// Signed makes a keystore of storeType (JKS or PKCS12) as Flink's SSL
// documentation does for a CA-signed certificate: a key pair with alias
// name, a certificate request the CA signs for localhost and 127.0.0.1,
// the CA's certificate imported as a trusted entry, then the signed
// certificate (so the key's chain is the certificate and the CA's). For
// JKS, keyPassword ("" for the store's) is the key's own password.
func (k *Tool) Signed(ca *CA, name, storeType, storePassword, keyPassword string) Store {
	k.t.Helper()
	if keyPassword == "" || storeType == "PKCS12" {
		keyPassword = storePassword
	}
	s := Store{Path: k.Path(name + "." + strings.ToLower(storeType)), Type: storeType, StorePassword: storePassword, KeyPassword: keyPassword}
	store := []string{"-keystore", s.Path, "-storetype", storeType, "-storepass", storePassword}
	k.Run(append([]string{"-genkeypair", "-alias", name, "-dname", "CN=" + name, "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
		"-keypass", keyPassword}, store...)...)
	csr, crt := k.Path(name+".csr"), k.Path(name+".crt")
	k.Run(append([]string{"-certreq", "-alias", name, "-keypass", keyPassword, "-file", csr}, store...)...)
	k.Run("-gencert", "-alias", ca.alias, "-keystore", ca.Path, "-storepass", ca.StorePassword, "-infile", csr, "-outfile", crt, "-rfc",
		"-validity", "2", "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-ext", "EKU=serverAuth,clientAuth")
	k.Run(append([]string{"-importcert", "-noprompt", "-alias", ca.alias, "-file", ca.CertPEM}, store...)...)
	k.Run(append([]string{"-importcert", "-noprompt", "-alias", name, "-keypass", keyPassword, "-file", crt}, store...)...)
	return s
}

// SelfSigned makes a keystore of storeType holding one key pair (alias
// name) and its self-signed certificate, as Flink's SSL documentation
// sets up internal SSL: the same file is then the keystore and the
// truststore of every process.
func (k *Tool) SelfSigned(name, storeType, password string) Store {
	k.t.Helper()
	s := Store{Path: k.Path(name + "." + strings.ToLower(storeType)), Type: storeType, StorePassword: password, KeyPassword: password}
	k.Run("-genkeypair", "-alias", name, "-dname", "CN="+name, "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-keyalg", "RSA", "-keysize", "2048",
		"-validity", "2", "-keystore", s.Path, "-storetype", storeType, "-storepass", password, "-keypass", password)
	return s
}

// AddKey adds another key pair (self-signed, alias) to a keystore.
func (k *Tool) AddKey(s Store, alias string) {
	k.t.Helper()
	k.Run("-genkeypair", "-alias", alias, "-dname", "CN="+alias, "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
		"-keystore", s.Path, "-storetype", s.Type, "-storepass", s.StorePassword, "-keypass", s.KeyPassword)
}

// Truststore makes a truststore of storeType trusting the certificate in
// the PEM file cert (keytool -importcert).
func (k *Tool) Truststore(name, storeType, password, cert string) Store {
	k.t.Helper()
	s := Store{Path: k.Path(name + "." + strings.ToLower(storeType)), Type: storeType, StorePassword: password}
	k.Run("-importcert", "-noprompt", "-alias", "trusted", "-file", cert, "-keystore", s.Path, "-storetype", storeType, "-storepass", password)
	return s
}

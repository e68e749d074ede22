package registry_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/registry"
)

const userV1 = `{"type":"record","name":"User","fields":[{"name":"id","type":"string"}]}`

// fake is franz-go's in-process registry, counting the requests it serves.
func fake(t *testing.T, opts ...srfake.Option) (*srfake.Registry, *atomic.Int64) {
	t.Helper()
	reg := srfake.New(opts...)
	t.Cleanup(reg.Close)
	var n atomic.Int64
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool { n.Add(1); return false })
	return reg, &n
}

func TestWireFormat(t *testing.T) {
	b := registry.AppendHeader([]byte("x"), 0x01020304)
	if want := []byte{'x', 0, 1, 2, 3, 4}; string(b) != string(want) {
		t.Fatalf("AppendHeader = %v, want %v", b, want)
	}
	id, payload, err := registry.SplitHeader("avro", append(registry.AppendHeader(nil, 7), "payload"...))
	if err != nil || id != 7 || string(payload) != "payload" {
		t.Fatalf("SplitHeader = %d %q %v", id, payload, err)
	}
	for _, tc := range []struct {
		in   []byte
		kind error
	}{
		{nil, formats.ErrNoValue},
		{[]byte{0, 0, 1}, formats.ErrNoMagicByte},
		{[]byte(`{"id":"secret"}`), formats.ErrNoMagicByte},
	} {
		_, _, err := registry.SplitHeader("avro", tc.in)
		if !errors.Is(err, tc.kind) || strings.Contains(fmt.Sprint(err), "secret") {
			t.Errorf("SplitHeader(%q) = %v, want %v without the payload", tc.in, err, tc.kind)
		}
	}
}

func TestRegisterOnWriteAndLookupOnlyAreCached(t *testing.T) {
	reg, requests := fake(t)
	c, err := registry.New(registry.Config{URLs: []string{reg.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := sr.Schema{Schema: userV1, Type: registry.Avro}
	if _, err := c.ID(ctx, "users-value", s, registry.LookupOnly); !errors.Is(err, formats.ErrUnknownSchema) {
		t.Fatalf("lookup of an unregistered schema: %v, want ErrUnknownSchema", err)
	}
	id, err := c.ID(ctx, "users-value", s, registry.RegisterOnWrite)
	if err != nil {
		t.Fatal(err)
	}
	before := requests.Load()
	for range 3 {
		if again, err := c.ID(ctx, "users-value", s, registry.RegisterOnWrite); err != nil || again != id {
			t.Fatalf("registering again: %d, %v; want %d", again, err, id)
		}
		if got, err := c.SchemaByID(ctx, id); err != nil || got.Schema != userV1 {
			t.Fatalf("SchemaByID(%d) = %+v, %v", id, got, err)
		}
	}
	if n := requests.Load() - before; n != 0 {
		t.Fatalf("%d requests for cached ids and schemas, want 0", n)
	}
	// A second client finds the registered schema by lookup, once.
	c2, _ := registry.New(registry.Config{URLs: []string{reg.URL()}})
	before = requests.Load()
	for range 2 {
		if got, err := c2.ID(ctx, "users-value", s, registry.LookupOnly); err != nil || got != id {
			t.Fatalf("lookup: %d, %v; want %d", got, err, id)
		}
	}
	if n := requests.Load() - before; n != 1 {
		t.Fatalf("%d requests for two lookups, want 1", n)
	}
	_, err = c2.SchemaByID(ctx, 999)
	var fe *formats.Error
	if !errors.Is(err, formats.ErrUnknownSchema) || !errors.As(err, &fe) || fe.SchemaID != 999 || !strings.Contains(err.Error(), "schema id 999") {
		t.Fatalf("unknown id: %v, want ErrUnknownSchema naming id 999", err)
	}
}

func TestCredentialsNeverShow(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, _ := fake(t, srfake.WithAuth("Basic "+basic("svc", "hunter2")))
	cfg := registry.Config{URLs: []string{reg.URL()}, BasicAuthUser: "svc", BasicAuthPassword: registry.SecretFromFile(pwFile)}
	c, err := registry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ID(context.Background(), "s", sr.Schema{Schema: userV1}, registry.RegisterOnWrite); err != nil {
		t.Fatalf("with the password from a file: %v", err)
	}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v %#v", cfg, cfg), cfg.BasicAuthPassword.String()} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("%q shows the password", s)
		}
	}
	t.Setenv("SR_TEST_PASSWORD", "wrong")
	bad, _ := registry.New(registry.Config{URLs: []string{reg.URL()}, BasicAuthUser: "svc", BasicAuthPassword: registry.SecretFromEnv("SR_TEST_PASSWORD")})
	_, err = bad.ID(context.Background(), "s", sr.Schema{Schema: userV1}, registry.RegisterOnWrite)
	if !errors.Is(err, formats.ErrRegistry) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong password: %v, want ErrRegistry without the password", err)
	}
	if _, err := registry.New(registry.Config{URLs: []string{reg.URL()}, BasicAuthUser: "svc", BasicAuthPassword: registry.SecretFromEnv("SR_TEST_UNSET")}); err == nil ||
		!strings.Contains(err.Error(), "SR_TEST_UNSET") {
		t.Fatalf("unset variable: %v", err)
	}
}

func basic(user, pw string) string {
	r, _ := http.NewRequest("GET", "http://x", nil)
	r.SetBasicAuth(user, pw)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

func TestConfigValidateListsEveryProblem(t *testing.T) {
	err := registry.Config{URLs: []string{"localhost:8081"}, BasicAuthUser: "u", CertFile: "c.pem", Timeout: -1}.Validate()
	for _, want := range []string{`"localhost:8081" is not http`, "both a user and a password", "both CertFile and KeyFile", "negative timeout"} {
		if !errors.Is(err, registry.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to say %q", err, want)
		}
	}
	if err := (registry.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "no registry URL") {
		t.Errorf("empty config: %v", err)
	}
}

// A registry that fails (a 5xx) or cannot be reached is not an unknown
// id: the error is ErrUnavailable, and the id is asked again next time.
func TestUnavailableRegistryIsNotAnUnknownID(t *testing.T) {
	reg, _ := fake(t)
	var failing atomic.Bool
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if failing.Load() && strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			http.Error(w, `{"error_code":50001,"message":"store unavailable"}`, http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	c, err := registry.New(registry.Config{URLs: []string{reg.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := c.ID(ctx, "users-value", sr.Schema{Schema: userV1}, registry.RegisterOnWrite)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := registry.New(registry.Config{URLs: []string{reg.URL()}})
	failing.Store(true)
	_, err = fresh.SchemaByID(ctx, id)
	var fe *formats.Error
	if !errors.Is(err, formats.ErrUnavailable) || errors.Is(err, formats.ErrUnknownSchema) || !errors.As(err, &fe) || !fe.Unavailable() || fe.SchemaID != id {
		t.Fatalf("a failing registry: %v, want ErrUnavailable naming id %d", err, id)
	}
	failing.Store(false)
	if s, err := fresh.SchemaByID(ctx, id); err != nil || s.Schema != userV1 {
		t.Fatalf("after the registry recovered: %q, %v", s.Schema, err)
	}
	down, _ := fake(t)
	url := down.URL()
	down.Close()
	gone, _ := registry.New(registry.Config{URLs: []string{url}})
	if _, err := gone.SchemaByID(ctx, 1); !errors.Is(err, formats.ErrUnavailable) {
		t.Fatalf("an unreachable registry: %v, want ErrUnavailable", err)
	}
	if _, err := fresh.SchemaByID(ctx, 4242); !errors.Is(err, formats.ErrUnknownSchema) || errors.Is(err, formats.ErrUnavailable) {
		t.Fatalf("an id the registry does not have: %v, want ErrUnknownSchema", err)
	}
}

// An https registry is trusted through the CA file given (a PEM file, as
// the other credentials from a file); without it the system's roots
// refuse the test's certificate.
func TestTLSWithACAFile(t *testing.T) {
	reg, _ := fake(t)
	target, err := url.Parse(reg.URL())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := registry.New(registry.Config{URLs: []string{srv.URL}, CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := c.ID(ctx, "users-value", sr.Schema{Schema: userV1}, registry.RegisterOnWrite)
	if err != nil {
		t.Fatalf("over TLS with the CA file: %v", err)
	}
	untrusting, err := registry.New(registry.Config{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusting.SchemaByID(ctx, id); !errors.Is(err, formats.ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA file: %v, want ErrUnavailable naming the certificate", err)
	}
	if _, err := registry.New(registry.Config{URLs: []string{srv.URL}, CAFile: filepath.Join(t.TempDir(), "missing.pem")}); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Fatalf("a missing CA file: %v, want an error naming it", err)
	}
}

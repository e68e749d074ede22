package rpcauth

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/conf"
)

func TestSecretPath(t *testing.T) {
	for _, tc := range []struct {
		name, file, home, want string
		wantErr                bool
	}{
		{"default under home", "", "/home/u", "/home/u/.sluice/internal-secret", false},
		{"absolute", "/etc/sluice/secret", "/home/u", "/etc/sluice/secret", false},
		{"relative to the working directory (a YARN container)", "internal-secret", "", "/work/internal-secret", false},
		{"no home, no option", "", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := conf.New()
			if tc.file != "" {
				c = c.Set(conf.InternalSecretFile.Key(), tc.file)
			}
			got, err := SecretPath(c, "/work", tc.home)
			var sfe *SecretFileError
			if tc.wantErr {
				if !errors.As(err, &sfe) || sfe.Key != conf.InternalSecretFile.Key() {
					t.Fatalf("SecretPath = %q, %v; want a SecretFileError naming the key", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("SecretPath = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestFromConfCreatesAndReads(t *testing.T) {
	home := t.TempDir()
	a, err := FromConf(conf.New(), Options{CreateSecret: true, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, ".sluice", "internal-secret")
	for p, want := range map[string]fs.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %04o, want %04o", p, fi.Mode().Perm(), want)
		}
	}
	// A second process reads the same secret; a worker told the path too.
	b, err := FromConf(conf.New(), Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	w, err := FromConf(conf.FromMap(a.WorkerConfiguration(), conf.Source{Name: "worker"}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(a.secret) != string(b.secret) || string(a.secret) != string(w.secret) {
		t.Error("processes reading one secret file disagree")
	}
	if d := a.Describe(); strings.Contains(d, string(a.secret)) || !strings.Contains(d, path) {
		t.Errorf("Describe = %q: it names the file, never the secret", d)
	}
}

func TestFromConfRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode fs.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, path string
		create     bool
		want       string
		is         error
	}{
		{"missing, not to be created (a worker)", filepath.Join(dir, "none"), false, "no such file", fs.ErrNotExist},
		{"readable by others", write("open", long, 0o644), false, "chmod 600", ErrSecretFileMode},
		{"readable by the group, even when creating", write("group", long, 0o640), true, "mode 0640", ErrSecretFileMode},
		{"too short", write("short", "abc\n", 0o600), false, "3 characters long", nil},
		{"a directory", dir, false, "not a regular file", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromConf(conf.New().Set(conf.InternalSecretFile.Key(), tc.path), Options{CreateSecret: tc.create})
			var sfe *SecretFileError
			if !errors.As(err, &sfe) || sfe.Path != tc.path || sfe.Key != conf.InternalSecretFile.Key() {
				t.Fatalf("FromConf: %v; want a SecretFileError naming %s and the key", err, tc.path)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q does not say %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v does not match %v", err, tc.is)
			}
		})
	}
}

// Processes starting together on a host agree on one secret.
func TestConcurrentCreationAgrees(t *testing.T) {
	home := t.TempDir()
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			s, err := FromConf(conf.New(), Options{CreateSecret: true, Home: home})
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = string(s.secret)
		})
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] {
			t.Fatalf("secrets differ: %q", got)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(home, ".sluice", ".secret-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// serve runs a gRPC server with the health service behind sec.
func serve(t *testing.T, sec *Security) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(sec.ServerOptions()...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func TestInterceptorsRefuseWithoutTheSecret(t *testing.T) {
	server := WithSecret([]byte(strings.Repeat("s", 64)))
	addr := serve(t, server)
	for _, tc := range []struct {
		name string
		opts []grpc.DialOption
		md   metadata.MD
		want codes.Code
		msg  string
	}{
		{"the cluster's secret", server.DialOptions(), nil, codes.OK, ""},
		{"no secret", []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, nil, codes.Unauthenticated, "sent none"},
		{"another cluster's secret", WithSecret([]byte(strings.Repeat("t", 64))).DialOptions(), nil, codes.Unauthenticated, "sent another"},
		{"a prefix of the secret", []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())},
			metadata.Pairs(MetadataKey, strings.Repeat("s", 63)), codes.Unauthenticated, "sent another"},
		{"the secret twice", server.DialOptions(), metadata.Pairs(MetadataKey, strings.Repeat("s", 64)), codes.Unauthenticated, "sent 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, err := grpc.NewClient(addr, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx := context.Background()
			if tc.md != nil {
				ctx = metadata.NewOutgoingContext(ctx, tc.md)
			}
			c := healthpb.NewHealthClient(cc)
			_, uerr := c.Check(ctx, &healthpb.HealthCheckRequest{})
			st, serr := c.Watch(ctx, &healthpb.HealthCheckRequest{})
			if serr == nil {
				_, serr = st.Recv()
			}
			for kind, err := range map[string]error{"unary": uerr, "stream": serr} {
				if status.Code(err) != tc.want {
					t.Errorf("%s: %v, want %v", kind, err, tc.want)
				}
				if tc.msg != "" && (!strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), conf.InternalSecretFile.Key())) {
					t.Errorf("%s: %q does not say %q and name %s", kind, err, tc.msg, conf.InternalSecretFile.Key())
				}
			}
		})
	}
}

// A nil Security (a component tested alone) authenticates nothing.
func TestNilSecurity(t *testing.T) {
	var s *Security
	if s.ServerOptions() != nil || s.WorkerConfiguration() != nil || len(s.DialOptions()) != 1 || s.Check(context.Background()) != nil {
		t.Error("a nil Security adds options")
	}
}

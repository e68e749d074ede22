package delegation

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn"
	"github.com/sluice/sluice/yarn/internal/ipc/ipctest"
	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
)

func TestNameNodeOf(t *testing.T) {
	conf := func(kv ...string) *hadoop.Configuration {
		c := hadoop.NewConfiguration(func(string) string { return "" })
		for i := 0; i < len(kv); i += 2 {
			c.Set(kv[i], kv[i+1])
		}
		return c
	}
	tests := []struct {
		name string
		c    *hadoop.Configuration
		uri  string
		want NameNode
		err  string
	}{
		{"default fs with port", conf("fs.defaultFS", "hdfs://nn.example.com:9000", KeyNameNodePrincipal, "hdfs/_HOST@EX.COM"), "",
			NameNode{Addr: "nn.example.com:9000", Principal: "hdfs/_HOST@EX.COM"}, ""},
		{"explicit fs without port", conf(KeyNameNodePrincipal, "nn/_HOST@EX.COM"), "hdfs://other",
			NameNode{Addr: "other:8020", Principal: "nn/_HOST@EX.COM"}, ""},
		{"not hdfs", conf("fs.defaultFS", "file:///", KeyNameNodePrincipal, "hdfs/_HOST@EX.COM"), "", NameNode{}, `"file:///" is not an hdfs://host:port URI`},
		{"no principal", conf("fs.defaultFS", "hdfs://nn:8020"), "", NameNode{}, "dfs.namenode.kerberos.principal is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NameNodeOf(tc.c, tc.uri)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("NameNodeOf = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestObtainFromInsecureNameNode: a NameNode that asks to fall back to
// SIMPLE (security off, or an impostor) is refused unless
// FallbackToSimpleAllowed; when allowed, an insecure NameNode issues no
// token.
func TestObtainFromInsecureNameNode(t *testing.T) {
	tests := []struct {
		name     string
		allowed  bool
		wantErr  error
		wantCall bool
	}{
		{name: "refused by default", wantErr: yarn.ErrFallbackToSimple},
		{name: "allowed", allowed: true, wantErr: ErrNoToken, wantCall: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nn, err := ipctest.New(ipctest.Options{SimpleOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer nn.Close()
			nn.Handle(ClientProtocol, "getDelegationToken", func(context.Context, *ipctest.Call) (proto.Message, error) {
				return &commonpb.GetDelegationTokenResponseProto{}, nil // what a NameNode with security off answers
			})
			// The NameNode never asks for a ticket.
			c, err := New(Config{Login: &kerberos.Login{}, FallbackToSimpleAllowed: tt.allowed})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.ObtainHDFS(context.Background(), NameNode{Addr: nn.Addr(), Principal: "nn/_HOST@EXAMPLE.COM"}, "yarn")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if called := nn.Calls() > 0; called != tt.wantCall {
				t.Errorf("getDelegationToken reached the NameNode: %v, want %v", called, tt.wantCall)
			}
		})
	}
}

package kerberos

import (
	"errors"
	"testing"
)

func TestServiceHost(t *testing.T) {
	lookup := func(ip string) ([]string, error) {
		switch ip {
		case "172.30.16.10":
			return []string{"master.", "sluice-master."}, nil
		case "10.0.0.1":
			return nil, errors.New("no PTR record")
		case "10.0.0.2":
			return []string{}, nil
		case "::1":
			return []string{"Localhost"}, nil
		}
		t.Errorf("unexpected lookup of %q", ip)
		return nil, errors.New("unexpected")
	}
	for _, tc := range []struct{ host, want string }{
		{"master", "master"},
		{"NN1.Example.COM", "nn1.example.com"},
		{"172.30.16.10", "master"},
		{"10.0.0.1", "10.0.0.1"}, // no reverse record: the address, as Java's getCanonicalHostName
		{"10.0.0.2", "10.0.0.2"},
		{"[::1]", "localhost"},
		{"::1", "localhost"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			if got := serviceHost(tc.host, lookup); got != tc.want {
				t.Errorf("serviceHost(%q) = %q, want %q", tc.host, got, tc.want)
			}
		})
	}
}

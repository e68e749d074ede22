package secret_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/secret"
)

func TestSecretIsNeverPrinted(t *testing.T) {
	const value = "hunter2-s3cr3t"
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte(value+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECRET_TEST_PW", value)
	for _, tc := range []struct {
		s    secret.Secret
		from string
	}{
		{secret.Value(value), "secret(value)"},
		{secret.FromEnv("SECRET_TEST_PW"), "secret(env:SECRET_TEST_PW)"},
		{secret.FromFile(file), "secret(file:" + file + ")"},
	} {
		got, err := tc.s.Reveal()
		if err != nil || got != value {
			t.Fatalf("%s: Reveal = %q, %v", tc.from, got, err)
		}
		var logged bytes.Buffer
		slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "pw", tc.s)
		for _, out := range []string{fmt.Sprint(tc.s), fmt.Sprintf("%v %+v %#v %s %q %x", tc.s, tc.s, tc.s, tc.s, tc.s, tc.s),
			fmt.Sprintf("%+v %#v", struct{ S secret.Secret }{tc.s}, struct{ s secret.Secret }{tc.s}), logged.String()} {
			if strings.Contains(out, value) || strings.Contains(out, fmt.Sprintf("%x", value)) {
				t.Errorf("%s: the value is printed: %s", tc.from, out)
			}
		}
		if tc.s.String() != tc.from {
			t.Errorf("String = %q, want %q", tc.s.String(), tc.from)
		}
	}
}

func TestSecretErrorsNameTheSource(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	t.Setenv("SECRET_TEST_EMPTY", "")
	for _, tc := range []struct {
		s    secret.Secret
		want string
	}{
		{secret.Secret{}, "no secret configured"},
		{secret.FromEnv("SECRET_TEST_UNSET_X"), "secret(env:SECRET_TEST_UNSET_X): environment variable SECRET_TEST_UNSET_X is not set"},
		{secret.FromEnv("SECRET_TEST_EMPTY"), "environment variable SECRET_TEST_EMPTY is empty"},
		{secret.FromFile(filepath.Join(dir, "none")), "secret(file:" + filepath.Join(dir, "none") + "): reading secret file"},
		{secret.FromFile(empty), "secret file " + empty + " is empty"},
		{secret.Value(""), "empty secret value"},
	} {
		if _, err := tc.s.Reveal(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.s, err, tc.want)
		}
	}
	if !(secret.Secret{}).IsZero() || secret.Value("x").IsZero() {
		t.Error("IsZero")
	}
}

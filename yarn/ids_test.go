package yarn

import (
	"errors"
	"testing"
)

func TestIDTextForms(t *testing.T) {
	app := ApplicationID{ClusterTimestamp: 1410901177871, ID: 1}
	att := ApplicationAttemptID{Application: app, Attempt: 1}
	tests := []struct {
		got, want string
	}{
		{app.String(), "application_1410901177871_0001"},
		{ApplicationID{ClusterTimestamp: 5, ID: 123456}.String(), "application_5_123456"},
		{att.String(), "appattempt_1410901177871_0001_000001"},
		{ContainerID{Attempt: att, ID: 5}.String(), "container_1410901177871_0001_01_000005"},
		{ContainerID{Attempt: att, ID: 17<<40 | 5}.String(), "container_e17_1410901177871_0001_01_000005"},
		{ContainerID{Attempt: ApplicationAttemptID{Application: app, Attempt: 123}, ID: 1234567}.String(), "container_1410901177871_0001_123_1234567"},
		{NodeID{Host: "nm1", Port: 45454}.String(), "nm1:45454"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestParseIDs(t *testing.T) {
	c, err := ParseContainerID("container_e17_1410901177871_0001_01_000005")
	if err != nil {
		t.Fatal(err)
	}
	if c.Epoch() != 17 || c.Sequence() != 5 || c.Attempt.Attempt != 1 || c.Attempt.Application.ID != 1 || c.Attempt.Application.ClusterTimestamp != 1410901177871 {
		t.Errorf("parsed %+v", c)
	}
	a, err := ParseApplicationID("application_1410901177871_0001")
	if err != nil || a != (ApplicationID{1410901177871, 1}) {
		t.Errorf("ParseApplicationID = %v, %v", a, err)
	}
	at, err := ParseApplicationAttemptID("appattempt_1410901177871_0001_000002")
	if err != nil || at.Attempt != 2 || at.Application != a {
		t.Errorf("ParseApplicationAttemptID = %v, %v", at, err)
	}
	n, err := ParseNodeID("[::1]:8041")
	if err != nil || n.Host != "::1" || n.Port != 8041 {
		t.Errorf("ParseNodeID = %v, %v", n, err)
	}
	for _, bad := range []string{
		"", "application_1", "application_x_0001", "app_1_1", "application_1_-1", "application_1_0001_2",
		"container_1_0001_01", "container_ex_1_0001_01_000001", "container_1_0001_01_1099511627776",
		"appattempt_1_1", "container_e16777216_1_1_1_1",
	} {
		if _, err := ParseApplicationID(bad); err == nil {
			t.Errorf("ParseApplicationID(%q) succeeded", bad)
		}
		if _, err := ParseContainerID(bad); err == nil {
			t.Errorf("ParseContainerID(%q) succeeded", bad)
		} else if !errors.Is(err, ErrBadID) {
			t.Errorf("ParseContainerID(%q) err %v does not wrap ErrBadID", bad, err)
		}
	}
	if _, err := ParseNodeID("nm1"); !errors.Is(err, ErrBadID) {
		t.Errorf("ParseNodeID without port: %v", err)
	}
}

func FuzzParseContainerID(f *testing.F) {
	f.Add("container_e17_1410901177871_0001_01_000005")
	f.Add("container_1410901177871_0001_01_000005")
	f.Add("container_e0_1_1_1_1")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseContainerID(s)
		if err != nil {
			if !errors.Is(err, ErrBadID) {
				t.Fatalf("error does not wrap ErrBadID: %v", err)
			}
			return
		}
		back, err := ParseContainerID(c.String())
		if err != nil || back != c {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, c, c.String(), back, err)
		}
	})
}

func FuzzParseApplicationID(f *testing.F) {
	f.Add("application_1410901177871_0001")
	f.Add("application_0_10000")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseApplicationID(s)
		if err != nil {
			return
		}
		back, err := ParseApplicationID(a.String())
		if err != nil || back != a {
			t.Fatalf("%q -> %v -> %v, %v", s, a, back, err)
		}
	})
}

func FuzzParseApplicationAttemptID(f *testing.F) {
	f.Add("appattempt_1410901177871_0001_000001")
	f.Add("appattempt_0_10000_2147483647")
	f.Add("appattempt_1_1_2147483648")
	f.Add("appattempt_1_1")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseApplicationAttemptID(s)
		if err != nil {
			if !errors.Is(err, ErrBadID) {
				t.Fatalf("error does not wrap ErrBadID: %v", err)
			}
			return
		}
		if a.Attempt < 0 || a.Application.ID < 0 || a.Application.ClusterTimestamp < 0 {
			t.Fatalf("%q -> negative field in %+v", s, a)
		}
		back, err := ParseApplicationAttemptID(a.String())
		if err != nil || back != a {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, a, a.String(), back, err)
		}
	})
}

func FuzzParseNodeID(f *testing.F) {
	f.Add("nm1.example.com:45454")
	f.Add("[::1]:8041")
	f.Add("10.0.0.7:0")
	f.Add("host:2147483648")
	f.Add(":8041")
	f.Add("nm1")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseNodeID(s)
		if err != nil {
			if !errors.Is(err, ErrBadID) {
				t.Fatalf("error does not wrap ErrBadID: %v", err)
			}
			return
		}
		if n.Host == "" || n.Port < 0 {
			t.Fatalf("%q -> %+v", s, n)
		}
		back, err := ParseNodeID(n.String())
		if err != nil || back != n {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, n, n.String(), back, err)
		}
	})
}

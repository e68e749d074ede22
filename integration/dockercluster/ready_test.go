package dockercluster

import (
	"errors"
	"strings"
	"testing"
)

const goodReady = `conf_dir=/tmp/c/conf
network=sluice-cluster
subnet=172.30.15.0/24
node.master=sluice-master 172.30.15.10 master master
node.worker1=sluice-worker1 172.30.15.11 worker1 worker
node.worker2=sluice-worker2 172.30.15.12 worker2 worker
node.kafka1=sluice-kafka1 172.30.15.21 kafka1 kafka
bootstrap=172.30.15.21:9092
startup_s=80
`

func TestParseReady(t *testing.T) {
	c, err := ParseReady("READY", []byte(goodReady))
	if err != nil {
		t.Fatal(err)
	}
	if c.ConfDir != "/tmp/c/conf" || c.Network != "sluice-cluster" || c.Master().IP != "172.30.15.10" {
		t.Errorf("parsed %+v", c)
	}
	if w := c.Role(RoleWorker); len(w) != 2 || w[1] != (Node{Name: "worker2", Container: "sluice-worker2", IP: "172.30.15.12", Role: RoleWorker}) {
		t.Errorf("workers %+v", w)
	}
	if b := c.Bootstrap(); len(b) != 1 || b[0] != "172.30.15.21:9092" {
		t.Errorf("bootstrap %v", b)
	}
	if _, err := c.Node("worker9"); !errors.Is(err, ErrNoNode) {
		t.Errorf("Node(worker9): %v, want ErrNoNode", err)
	}
}

const secureReady = goodReady + `node.kdc=sluice-kdc 172.30.15.9 kdc kdc
secure=true
realm=DOCKER.SLUICE.TEST
krb5_conf=/tmp/c/kerberos/krb5.conf
client_principal=sluice@DOCKER.SLUICE.TEST
client_keytab=/tmp/c/kerberos/sluice.keytab
gssapi_bootstrap=kafka1:9094
`

func TestParseReadySecure(t *testing.T) {
	c, err := ParseReady("READY", []byte(secureReady))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Secure() || len(c.Role(RoleKDC)) != 1 || c.Fields[KeyGSSAPIBootstrap] != "kafka1:9094" {
		t.Errorf("parsed %+v", c)
	}
	if c2, _ := ParseReady("READY", []byte(goodReady)); c2.Secure() {
		t.Error("a READY without secure=true parsed as secure")
	}
}

func TestParseReadyProblems(t *testing.T) {
	for _, tc := range []struct {
		name, edit string
		want       []string
	}{
		{"not key=value", goodReady + "garbage\n", []string{`"garbage" is not key=value`}},
		{"short node", strings.Replace(goodReady, " worker1 worker\n", "\n", 1), []string{"node.worker1", "CONTAINER IP HOSTNAME ROLE"}},
		{"bad ip", strings.Replace(goodReady, "172.30.15.21 kafka1", "kafka1 kafka1", 1), []string{`"kafka1" is not an IP address`}},
		{"bad role", strings.Replace(goodReady, "worker2 worker", "worker2 nodemanager", 1), []string{`unknown role "nodemanager"`}},
		{"no master, no conf", strings.NewReplacer("conf_dir=/tmp/c/conf\n", "", "node.master=sluice-master 172.30.15.10 master master\n", "").Replace(goodReady),
			[]string{"no conf_dir", "want one master, workers and brokers; have 0, 2 and 1"}},
		{"secure without its keys", strings.NewReplacer("realm=DOCKER.SLUICE.TEST\n", "", "gssapi_bootstrap=kafka1:9094\n", "").Replace(secureReady),
			[]string{"secure=true without realm", "secure=true without gssapi_bootstrap"}},
		{"secure without a kdc", strings.Replace(secureReady, "node.kdc=sluice-kdc 172.30.15.9 kdc kdc\n", "", 1),
			[]string{"secure=true wants one kdc node, have 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseReady("DIR/READY", []byte(tc.edit))
			if !errors.Is(err, ErrReady) {
				t.Fatalf("err %v, want ErrReady", err)
			}
			for _, w := range append(tc.want, "DIR/READY") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

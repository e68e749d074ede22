//go:build integration

package yarntest

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
)

// shortTicketKrb5Conf writes a copy of the KDC's krb5.conf asking for
// tickets of lifetime: every Sluice process of the application (the
// client ships it with the keytab) then holds TGTs that die within
// minutes.
func shortTicketKrb5Conf(t *testing.T, src string, lifetime time.Duration) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(\s*ticket_lifetime\s*=\s*).*$`)
	if !re.Match(b) {
		t.Fatalf("%s has no ticket_lifetime line to shorten", src)
	}
	b = re.ReplaceAll(b, []byte("${1}"+strconv.Itoa(int(lifetime.Seconds()))+"s"))
	p := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSecureJobOutlivesCredentials: a job on the Kerberized cluster runs
// well past the lifetime of everything it was started with — its
// processes' TGTs (90 s, asked for by the shipped krb5.conf), the HDFS
// delegation tokens the client obtained at submission (the secure
// cluster's tokens must be renewed every 40 s and die after 100 s), the
// AMRMToken and NMTokens (the ResourceManager rolls their master keys
// every 100 s) — and keeps checkpointing to HDFS. After the first tokens
// have died a TaskManager container is killed: YARN can only localize its
// replacement from the staging directory on HDFS with tokens the
// ApplicationMaster obtained since, and the job recovers from its latest
// checkpoint with exactly-once output. The logs show the re-logins, the
// token rounds and the roll-over.
func TestSecureJobOutlivesCredentials(t *testing.T) {
	r, k := newSecureRig(t)
	if k.TokenMaxLifetime <= 0 || k.TokenMaxLifetime > 5*time.Minute {
		t.Fatalf("the secure cluster's delegation tokens live %v; this test needs them short (its READY names delegation_token_max_lifetime_ms)", k.TokenMaxLifetime)
	}
	const ticketLifetime = 90 * time.Second
	krb5 := shortTicketKrb5Conf(t, k.Krb5Conf, ticketLifetime)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	out := r.hdfs + "/out"
	// 9000 records at 50/s: the job runs about three minutes, a minute
	// past the kill.
	const n, keys = 9000, 6
	args := append([]string{"run", "--target", "yarn-application", "-p", "2",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dyarn.application.name=yarntest-lifetimes",
		"-Dexecution.checkpointing.interval=2s", "-Drestart-strategy.type=fixed-delay",
		"-Drestart-strategy.fixed-delay.attempts=10", "-Drestart-strategy.fixed-delay.delay=100ms",
		"-Dsecurity.kerberos.login.keytab=" + k.Keytab, "-Dsecurity.kerberos.login.principal=" + k.Principal,
		"-Dsecurity.kerberos.krb5-conf.path=" + krb5}, small...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "50")
	submitted := time.Now()
	p, appID, addr, rc, job := r.deploy(t, ctx, args...)

	// Until the tokens of the submission are dead (and the first TGTs
	// with them), checkpoints keep completing.
	deadline := submitted.Add(k.TokenMaxLifetime + 10*time.Second)
	var completedAtKill int64
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("sluice run ended %v after the submission, before the tokens of the submission expired (%v): %v\n%s",
				time.Since(submitted).Round(time.Second), k.TokenMaxLifetime, p.err, p.out.String())
		case <-time.After(time.Second):
		}
	}
	st, err := rc.JobCheckpoints(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	completedAtKill = st.Counts.Completed
	if d, err := rc.Job(ctx, job); err != nil || string(d.State) != "RUNNING" {
		t.Fatalf("job %s %v after the submission: %v (err %v); want it RUNNING", job, time.Since(submitted).Round(time.Second), d, err)
	}
	if st.Latest.Completed == nil || time.Since(time.UnixMilli(st.Latest.Completed.LatestAckTimestamp)) > 20*time.Second {
		t.Fatalf("%v after the submission the latest completed checkpoint of %s is %+v: checkpoints stopped", time.Since(submitted).Round(time.Second), job, st.Latest.Completed)
	}
	t.Logf("%d checkpoints completed %v after the submission", completedAtKill, time.Since(submitted).Round(time.Second))
	checkCredentialMetrics(t, ctx, addr, ticketLifetime, k.TokenRenewInterval)

	// A TaskManager dies after the tokens of the submission did: its
	// replacement container must be localized with fresh ones.
	before := map[string]bool{}
	tms, err := rc.TaskManagers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range tms {
		before[tm.ID] = true
	}
	victims := taskManagersWithWorkers(appID)
	if len(victims) == 0 {
		t.Fatalf("no TaskManager container of %s runs a worker", appID)
	}
	killed := killTaskManager(t, ctx, rc, victims[0], before)
	testwait.Eventually(t, 2*time.Minute, "a checkpoint completed after the recovery", func() bool {
		st, err := rc.JobCheckpoints(ctx, job)
		return err == nil && st.Latest.Completed != nil && st.Latest.Completed.LatestAckTimestamp > killed.UnixMilli()
	})
	// The replacement was launched with the ApplicationMaster's current
	// tokens: /metrics says when they expire, ahead of now.
	var fresh []string
	for id, exp := range checkCredentialMetrics(t, ctx, addr, ticketLifetime, k.TokenRenewInterval) {
		if !before[id] && exp > float64(time.Now().Unix()) {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) == 0 {
		t.Errorf("no replacement TaskManager exports the expiry of fresh delegation tokens (those before the kill: %v)", before)
	}
	succeeded(t, p, appID)
	checkExactlyOnce(t, r.fs, out, n, keys)

	// What the processes logged: the ApplicationMaster re-logged in,
	// obtained tokens again and again, and used a rolled AMRMToken; every
	// TaskManager that lived long enough re-logged in.
	ran := time.Since(submitted)
	am := containerLogs(t, r.c, appID, "jobmanager.log")
	if len(am) != 1 {
		t.Fatalf("ApplicationMaster logs of %s: %q, want one", appID, am)
	}
	b, err := os.ReadFile(am[0])
	if err != nil {
		t.Fatal(err)
	}
	amLog := string(b)
	if c := strings.Count(amLog, "kerberos: TGT refreshed"); c < 1 {
		t.Errorf("the ApplicationMaster refreshed its TGT %d times in %v with tickets of %v", c, ran.Round(time.Second), ticketLifetime)
	}
	if strings.Contains(amLog, "re-login failed") {
		t.Errorf("the ApplicationMaster's log shows a failed re-login:\n%s", grepLine(amLog, "re-login failed"))
	}
	wantRounds := int(ran / k.TokenRenewInterval)
	if c := strings.Count(amLog, `msg="delegation: obtained tokens"`); c < wantRounds {
		t.Errorf("the ApplicationMaster obtained delegation tokens %d times in %v; tokens to renew every %v want at least %d rounds",
			c, ran.Round(time.Second), k.TokenRenewInterval, wantRounds)
	}
	if strings.Contains(amLog, "delegation: obtaining tokens failed") {
		t.Errorf("the ApplicationMaster failed to obtain tokens:\n%s", grepLine(amLog, "obtaining tokens failed"))
	}
	// The ResourceManager rolls its master key every MasterKeyRolling and
	// repeats the new token until the AM connects with it: one roll-over
	// each, logged once.
	rolls := strings.Count(amLog, "AMRMToken rolled over")
	if ran > k.MasterKeyRolling+15*time.Second && rolls == 0 {
		t.Errorf("in %v the ResourceManager (master key roll-over every %v) gave the ApplicationMaster no new AMRMToken", ran.Round(time.Second), k.MasterKeyRolling)
	}
	if max := int(ran/k.MasterKeyRolling) + 1; rolls > max {
		t.Errorf("the ApplicationMaster logged %d AMRMToken roll-overs in %v, at most %d happened", rolls, ran.Round(time.Second), max)
	}
	// Every TaskManager and every worker (a job program process in a
	// TaskManager container, logging to <worker>.err) keeps its own login.
	var tmRefreshed, workerRefreshed int
	for dir, files := range r.containerLogs(t, appID) {
		for _, f := range files {
			isTM := f == "taskmanager.log"
			isWorker := strings.HasSuffix(f, ".err") && !strings.HasPrefix(f, "taskmanager.") && f != "prelaunch.err" && !strings.HasPrefix(f, "jobmanager.")
			if !isTM && !isWorker {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "re-login failed") {
				t.Errorf("%s/%s shows a failed re-login:\n%s", filepath.Base(dir), f, grepLine(string(b), "re-login failed"))
			}
			if strings.Contains(string(b), "kerberos: TGT refreshed") {
				if isTM {
					tmRefreshed++
				} else {
					workerRefreshed++
				}
			}
		}
	}
	if tmRefreshed == 0 || workerRefreshed == 0 {
		t.Errorf("in %v with tickets of %v, %d TaskManagers and %d workers of %s refreshed their TGTs; want some of each",
			ran.Round(time.Second), ticketLifetime, tmRefreshed, workerRefreshed, appID)
	}
	r.stagingGone(t, appID)
}

// checkCredentialMetrics scrapes the JobManager's /metrics: the
// ApplicationMaster, every TaskManager and every worker export their TGT's
// expiry, which must lie ahead and within a ticket lifetime (they keep
// re-logging in); the ApplicationMaster has re-logged in and exports the
// expiry of its current delegation tokens, ahead and within a renewal
// interval, and no failure. It returns the expiry of the tokens each
// TaskManager was launched with (tm_id → Unix s); the first TaskManagers
// may lack one (launched with the client's tokens, of unknown expiry).
func checkCredentialMetrics(t *testing.T, ctx context.Context, addr string, ticket, renew time.Duration) (tmTokens map[string]float64) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	now := float64(time.Now().Unix())
	expiries := map[string]int{} // component -> series
	obtains := math.NaN()
	tmTokens = map[string]float64{} // tm_id -> expiry of its tokens
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "sluice_") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		labels, value, _ := strings.Cut(rest, "} ")
		var v float64
		if _, err := fmt.Sscan(value, &v); err != nil {
			t.Errorf("metrics line %q: %v", line, err)
			continue
		}
		switch name {
		case "sluice_kerberos_tgt_expiry_timestamp_seconds":
			m := regexp.MustCompile(`component="(\w+)"`).FindStringSubmatch(labels)
			if m == nil {
				t.Errorf("%s without a component: %q", name, line)
				continue
			}
			expiries[m[1]]++
			if v <= now || v > now+ticket.Seconds()+5 {
				t.Errorf("%s: expiry %v s from now; want ahead and within the ticket lifetime %v", line, v-now, ticket)
			}
		case "sluice_kerberos_relogin_failures_total", "sluice_delegation_token_obtain_failures_total":
			if v != 0 {
				t.Errorf("%s", line)
			}
		case "sluice_kerberos_relogins_total":
			if strings.Contains(labels, `component="jobmanager"`) && v < 1 {
				t.Errorf("%s: the ApplicationMaster has not re-logged in", line)
			}
		case "sluice_delegation_token_expiry_timestamp_seconds":
			if strings.Contains(labels, `component="taskmanager"`) {
				// The tokens a TaskManager was launched with: they may have
				// expired (it logs in with the keytab), but not beyond a
				// renewal interval from now.
				m := regexp.MustCompile(`tm_id="(container_\w+)"`).FindStringSubmatch(labels)
				if m == nil || v <= 0 || v > now+renew.Seconds()+5 {
					t.Errorf("%s: want a TaskManager's container id and an expiry at most the renewal interval %v from now", line, renew)
					continue
				}
				tmTokens[m[1]] = v
				continue
			}
			if v <= now || v > now+renew.Seconds()+5 {
				t.Errorf("%s: expiry %v s from now; want ahead and within the renewal interval %v", line, v-now, renew)
			}
		case "sluice_delegation_token_obtains_total":
			obtains = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading /metrics: %v", err)
	}
	if expiries["jobmanager"] != 1 || expiries["taskmanager"] < 2 || expiries["worker"] < 2 {
		t.Errorf("TGT expiry series per component: %v; want the jobmanager's, and those of at least two TaskManagers and two workers", expiries)
	}
	t.Logf("/metrics: TGT expiry series per component %v; %v rounds of delegation tokens; TaskManagers' tokens %v", expiries, obtains, tmTokens)
	if !(obtains >= 2) {
		t.Errorf("sluice_delegation_token_obtains_total = %v; want the rounds since the start (at least 2)", obtains)
	}
	return tmTokens
}

package jobmanager

import (
	"cmp"
	"slices"
	"sync"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/loginwire"
	"github.com/sluice/sluice/security/kerberos"
)

// WorkerLogin is the Kerberos login of one of a job's workers (which logs
// in for hdfs://), as its latest metrics report stated it.
type WorkerLogin struct {
	// TaskManagerID and Host name the TaskManager the worker runs on.
	TaskManagerID, Host string
	Status              kerberos.Status
}

// workerLogins keeps the login each worker of a job reported last, by
// TaskManager: a job has one worker per TaskManager, and a worker of a new
// attempt replaces the one before. A worker's login goes when its session
// ends, so that nothing is exported of a process that is gone. The zero
// value is ready for use.
type workerLogins struct {
	mu sync.Mutex
	by map[string]reportedLogin // by TaskManager id
}

type reportedLogin struct {
	from  *session
	login WorkerLogin
}

// report records what a worker's metrics report says of its login; a
// report without one forgets the worker's login.
func (w *workerLogins) report(s *session, k *clusterpb.KerberosStatus) {
	tm := s.hello.GetTaskManagerId()
	w.mu.Lock()
	defer w.mu.Unlock()
	if k == nil {
		if cur, ok := w.by[tm]; ok && cur.from == s {
			delete(w.by, tm)
		}
		return
	}
	if w.by == nil {
		w.by = map[string]reportedLogin{}
	}
	w.by[tm] = reportedLogin{from: s, login: WorkerLogin{TaskManagerID: tm, Host: s.host, Status: loginwire.Status(k)}}
}

// ended forgets the login of a worker whose session ended, unless a later
// worker on the same TaskManager reported since.
func (w *workerLogins) ended(s *session) {
	tm := s.hello.GetTaskManagerId()
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur, ok := w.by[tm]; ok && cur.from == s {
		delete(w.by, tm)
	}
}

// list returns the logins, sorted by TaskManager id.
func (w *workerLogins) list() []WorkerLogin {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]WorkerLogin, 0, len(w.by))
	for _, r := range w.by {
		out = append(out, r.login)
	}
	slices.SortFunc(out, func(a, b WorkerLogin) int { return cmp.Compare(a.TaskManagerID, b.TaskManagerID) })
	return out
}

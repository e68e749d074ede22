package resourcemanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/scheduler"
	"github.com/sluice/sluice/security/kerberos"
)

const (
	start    = int64(1_700_000_000_000)
	interval = time.Second
	timeout  = 5 * time.Second
	// wait bounds every wait of a test for something that must happen.
	wait = 10 * time.Second
)

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// recordingDriver is a Driver that records the ResourceManager's requests
// and lets the test report stopped workers.
type recordingDriver struct {
	mu       sync.Mutex
	required []int
	released []string
	events   chan DriverEvents
}

func newRecordingDriver() *recordingDriver {
	return &recordingDriver{events: make(chan DriverEvents, 1)}
}

func (d *recordingDriver) Run(ctx context.Context, events DriverEvents) error {
	d.events <- events
	<-ctx.Done()
	return nil
}

func (d *recordingDriver) SetRequired(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.required = append(d.required, n)
}

func (d *recordingDriver) Release(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.released = append(d.released, id)
}

func (d *recordingDriver) state() (required []int, released []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.required), slices.Clone(d.released)
}

type harness struct {
	t      *testing.T
	rm     *ResourceManager
	clock  *clock.Manual
	driver *recordingDriver
	addr   string
	conn   *grpc.ClientConn
	lost   chan LostTaskManager
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: clock.NewManual(start), driver: newRecordingDriver(), lost: make(chan LostTaskManager, 16)}
	cfg := Config{
		ID:                  "rm-test",
		HeartbeatInterval:   interval,
		HeartbeatTimeout:    timeout,
		SlotsPerTaskManager: 2,
		IdleTimeout:         time.Minute,
		Clock:               h.clock,
		Logger:              testLogger(t),
		OnTaskManagerLost:   func(l LostTaskManager) { h.lost <- l },
	}
	if mod != nil {
		mod(&cfg)
	}
	rm, err := New(cfg, h.driver)
	if err != nil {
		t.Fatal(err)
	}
	h.rm = rm
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = lis.Addr().String()
	srv := grpc.NewServer(grpc.WaitForHandlers(true))
	clusterpb.RegisterResourceManagerServer(srv, rm)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- rm.Run(ctx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(lis) }()
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	h.conn = conn
	t.Cleanup(func() {
		conn.Close()
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("Run: %v", err)
		}
		srv.Stop()
		<-serveDone
	})
	return h
}

func (h *harness) client() clusterpb.ResourceManagerClient {
	return clusterpb.NewResourceManagerClient(h.conn)
}

// tm is a TaskManager written with the generated client.
type tm struct {
	t      *testing.T
	id     string
	stream grpc.BidiStreamingClient[clusterpb.TaskManagerMessage, clusterpb.ResourceManagerMessage]
	cancel context.CancelFunc
	msgs   chan *clusterpb.ResourceManagerMessage
	err    chan error
	seq    int64
}

func (h *harness) connect(id string) *tm {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	stream, err := h.client().Connect(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	c := &tm{t: h.t, id: id, stream: stream, cancel: cancel, msgs: make(chan *clusterpb.ResourceManagerMessage, 64), err: make(chan error, 1)}
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				c.err <- err
				return
			}
			c.msgs <- m
		}
	}()
	return c
}

func register(id string, slots int32) *clusterpb.Register {
	return &clusterpb.Register{
		TaskManagerId: id, Address: "127.0.0.1:4" + fmt.Sprint(len(id)) + "00", Hostname: "host-" + id,
		Slots: slots, SlotProfile: &clusterpb.ResourceProfile{CpuCores: 0.5, MemoryBytes: 1 << 30}, Pid: 4242,
	}
}

func (c *tm) send(m *clusterpb.TaskManagerMessage) {
	c.t.Helper()
	if err := c.stream.Send(m); err != nil {
		c.t.Fatalf("%s: send: %v", c.id, err)
	}
}

func (c *tm) register(r *clusterpb.Register) {
	c.t.Helper()
	c.send(&clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Register{Register: r}})
}

// heartbeat sends a heartbeat reporting slots given as "job/alloc" or ""
// (free) per index.
func (c *tm) heartbeat(slots ...string) {
	c.t.Helper()
	c.seq++
	hb := &clusterpb.Heartbeat{Seq: c.seq}
	for i, s := range slots {
		job, alloc, _ := strings.Cut(s, "/")
		hb.Slots = append(hb.Slots, &clusterpb.SlotStatus{Index: int32(i), JobId: job, AllocationId: alloc})
	}
	c.send(&clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Heartbeat{Heartbeat: hb}})
}

// next returns the next message from the ResourceManager; skipHeartbeats
// passes over heartbeats.
func (c *tm) next(skipHeartbeats bool) *clusterpb.ResourceManagerMessage {
	c.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-c.msgs:
			if skipHeartbeats && m.GetHeartbeat() != nil {
				continue
			}
			return m
		case err := <-c.err:
			c.t.Fatalf("%s: stream ended: %v", c.id, err)
		case <-deadline:
			c.t.Fatalf("%s: no message from the ResourceManager within %v", c.id, wait)
		}
	}
}

// ended waits for the stream to end and returns its error.
func (c *tm) ended() (error, []*clusterpb.ResourceManagerMessage) {
	c.t.Helper()
	var got []*clusterpb.ResourceManagerMessage
	deadline := time.After(wait)
	for {
		select {
		case m := <-c.msgs:
			got = append(got, m)
		case err := <-c.err:
			for {
				select {
				case m := <-c.msgs:
					got = append(got, m)
				default:
					return err, got
				}
			}
		case <-deadline:
			c.t.Fatalf("%s: stream did not end within %v", c.id, wait)
		}
	}
}

func (c *tm) allocation() *clusterpb.AllocateSlot {
	c.t.Helper()
	m := c.next(true)
	a := m.GetAllocateSlot()
	if a == nil {
		c.t.Fatalf("%s: got %v, want AllocateSlot", c.id, m)
	}
	return a
}

// quiet checks that no message but heartbeats arrives until the
// ResourceManager has answered a round trip through its loop.
func (h *harness) quiet(c *tm) {
	h.t.Helper()
	h.snapshot() // every earlier operation has been applied
	for {
		select {
		case m := <-c.msgs:
			if m.GetHeartbeat() == nil {
				h.t.Fatalf("%s: unexpected %v", c.id, m)
			}
		default:
			return
		}
	}
}

// registered connects and registers a TaskManager and reads Registered.
func (h *harness) registered(id string, slots int32) *tm {
	h.t.Helper()
	c := h.connect(id)
	c.register(register(id, slots))
	m := c.next(false)
	if m.GetRegistered() == nil {
		h.t.Fatalf("%s: got %v, want Registered", id, m)
	}
	return c
}

func (h *harness) snapshot() []TaskManagerInfo {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tms, err := h.rm.TaskManagers(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	return tms
}

// eventually polls cond until it holds, failing after wait.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within %v", what, wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// beat sends a heartbeat and waits until the ResourceManager has recorded
// it at the current time.
func (h *harness) beat(c *tm, slots ...string) {
	h.t.Helper()
	c.heartbeat(slots...)
	now := h.clock.NowMillis()
	h.eventually(c.id+"'s heartbeat recorded", func() bool {
		for _, in := range h.snapshot() {
			if in.ID == c.id {
				return in.LastHeartbeat.Equal(time.UnixMilli(now))
			}
		}
		return false
	})
}

func (h *harness) declare(job string, slots int32) {
	h.t.Helper()
	if _, err := h.client().DeclareSlots(context.Background(), &clusterpb.SlotDemand{JobId: job, JobMasterAddress: "127.0.0.1:7000", Slots: slots}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) expectLost(id, reasonPart string) LostTaskManager {
	h.t.Helper()
	select {
	case l := <-h.lost:
		if l.ID != id || !strings.Contains(l.Reason, reasonPart) {
			h.t.Fatalf("lost %+v, want %s lost because of %q", l, id, reasonPart)
		}
		return l
	case <-time.After(wait):
		h.t.Fatalf("%s not reported lost within %v", id, wait)
	}
	return LostTaskManager{}
}

func (h *harness) noLoss() {
	h.t.Helper()
	h.snapshot()
	select {
	case l := <-h.lost:
		h.t.Fatalf("unexpected loss %+v", l)
	default:
	}
}

// slotsOf renders a TaskManager's slots in the snapshot as job letters and
// '.' for free, '*' marking pending ones.
func (h *harness) slotsOf(id string) string {
	for _, in := range h.snapshot() {
		if in.ID == id {
			var b strings.Builder
			for _, s := range in.Slots {
				switch {
				case s.JobID == "":
					b.WriteByte('.')
				case s.Pending:
					b.WriteString(s.JobID + "*")
				default:
					b.WriteString(s.JobID)
				}
			}
			return b.String()
		}
	}
	return "(not registered)"
}

func TestRegister(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect("tm-1")
	r := register("tm-1", 3)
	r.ResourceId = "container_1"
	c.register(r)
	m := c.next(false)
	want := &clusterpb.Registered{ResourceManagerId: "rm-test", HeartbeatIntervalMs: 1000, HeartbeatTimeoutMs: 5000}
	if !proto.Equal(m.GetRegistered(), want) {
		t.Fatalf("got %v, want Registered %v", m, want)
	}
	tms := h.snapshot()
	if len(tms) != 1 {
		t.Fatalf("snapshot %+v", tms)
	}
	got := tms[0]
	if got.ID != "tm-1" || got.ResourceID != "container_1" || got.Address != r.Address || got.Hostname != "host-tm-1" ||
		got.PID != 4242 || got.SlotsTotal != 3 || got.SlotsFree != 3 ||
		got.SlotResources != (Resources{CPUCores: 0.5, MemoryBytes: 1 << 30}) ||
		got.Resources != (Resources{CPUCores: 1.5, MemoryBytes: 3 << 30}) ||
		!got.RegisteredAt.Equal(time.UnixMilli(start)) || !got.LastHeartbeat.Equal(time.UnixMilli(start)) {
		t.Fatalf("snapshot %+v", got)
	}
	// The resource id defaults to the TaskManager id.
	h.registered("tm-2", 1)
	if tms := h.snapshot(); len(tms) != 2 || tms[1].ResourceID != "tm-2" {
		t.Fatalf("snapshot %+v", tms)
	}
}

func TestRegisterRefused(t *testing.T) {
	h := newHarness(t, nil)
	hb := &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Heartbeat{Heartbeat: &clusterpb.Heartbeat{}}}
	tests := []struct {
		name  string
		first *clusterpb.TaskManagerMessage
		code  codes.Code
		want  []string
	}{
		{"heartbeat first", hb, codes.InvalidArgument, []string{"first message", "must be Register"}},
		{"empty message", &clusterpb.TaskManagerMessage{}, codes.InvalidArgument, []string{"must be Register"}},
		{"everything wrong", &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Register{Register: &clusterpb.Register{
			Address: "nohost", SlotProfile: &clusterpb.ResourceProfile{CpuCores: -1, MemoryBytes: -2}, Pid: -1}}},
			codes.InvalidArgument, []string{"task_manager_id is empty", `address "nohost" is not host:port`, "slots 0",
				"slot_profile.cpu_cores -1", "slot_profile.memory_bytes -2", "pid -1"}},
		{"bad data port and hardware", &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Register{Register: &clusterpb.Register{
			TaskManagerId: "x", Address: "h:1", Slots: 1, DataPort: 70000, Hardware: &clusterpb.Hardware{CpuCores: 2, FreeMemoryBytes: -1}}}},
			codes.InvalidArgument, []string{"data_port 70000 is not a port", "hardware", "negative"}},
		{"bad port", &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Register{Register: &clusterpb.Register{
			TaskManagerId: "x", Address: "h:0", Slots: 1}}}, codes.InvalidArgument, []string{`TaskManager "x"`, `address "h:0" has no port`}},
		{"too many slots", &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Register{Register: &clusterpb.Register{
			TaskManagerId: "x", Address: "h:1", Slots: 1 << 20}}}, codes.InvalidArgument, []string{"slots 1048576: must be between 1 and 16384"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h.connect("x")
			c.send(tt.first)
			err, msgs := c.ended()
			if len(msgs) != 0 {
				t.Errorf("messages before the refusal: %v", msgs)
			}
			if status.Code(err) != tt.code {
				t.Fatalf("err %v, want code %v", err, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if tms := h.snapshot(); len(tms) != 0 {
		t.Fatalf("refused TaskManagers registered: %+v", tms)
	}
}

func TestRegisterDuplicate(t *testing.T) {
	h := newHarness(t, nil)
	first := h.registered("tm-1", 1)

	dup := h.connect("tm-1")
	dup.register(register("tm-1", 1))
	err, _ := dup.ended()
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), `TaskManager "tm-1" is registered from 127.0.0.1:4400`) {
		t.Fatalf("duplicate id: %v", err)
	}

	other := h.connect("tm-2")
	r := register("tm-2", 1)
	r.ResourceId = "tm-1"
	other.register(r)
	err, _ = other.ended()
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), `resource "tm-1" is registered as TaskManager "tm-1"`) {
		t.Fatalf("duplicate resource id: %v", err)
	}
	h.noLoss()

	// Once the first session ends, the id is free again.
	first.cancel()
	h.expectLost("tm-1", "")
	h.registered("tm-1", 1)
}

func TestRegisterTimeout(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect("slow")
	// Send nothing: the handler's deadline is armed once the stream reaches
	// it; advance the clock until it fires.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			select {
			case err := <-c.err:
				c.err <- err
				return
			case <-time.After(10 * time.Millisecond):
				h.clock.Advance(timeout.Milliseconds())
			}
		}
	}()
	<-done
	err, _ := c.ended()
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "no Register message in time") {
		t.Fatalf("got %v", err)
	}
}

func TestHeartbeats(t *testing.T) {
	h := newHarness(t, nil)
	alive := h.registered("alive", 1)
	silent := h.registered("silent", 1)

	// The ResourceManager sends a heartbeat to every TaskManager each
	// interval; the live TaskManager answers, the silent one does not.
	for i := int64(1); i <= 4; i++ {
		h.clock.Advance(interval.Milliseconds())
		for _, c := range []*tm{alive, silent} {
			if m := c.next(false); m.GetHeartbeat().GetSeq() != i {
				t.Fatalf("%s: got %v, want heartbeat %d", c.id, m, i)
			}
		}
		h.beat(alive, "")
	}
	h.noLoss()
	// At 5 s the silent one has been silent for the timeout.
	h.clock.Advance(interval.Milliseconds())
	l := h.expectLost("silent", "no heartbeat for 5s")
	if l.ResourceID != "silent" || l.Address != "127.0.0.1:4600" || !l.HeartbeatTimeout {
		t.Fatalf("lost %+v, want a heartbeat timeout", l)
	}
	err, msgs := silent.ended()
	if status.Code(err) != codes.Unavailable || len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1].GetDisconnect().GetReason(), "no heartbeat") {
		t.Fatalf("silent TaskManager's stream ended with %v after %v; want a Disconnect naming the timeout", err, msgs)
	}
	if tms := h.snapshot(); len(tms) != 1 || tms[0].ID != "alive" {
		t.Fatalf("snapshot %+v", tms)
	}
	h.noLoss()
}

func TestConnectionLossIsImmediate(t *testing.T) {
	h := newHarness(t, nil)
	c := h.registered("tm-1", 2)
	h.declare("job", 1)
	a := c.allocation()
	c.heartbeat("job/"+a.AllocationId, "")
	c.cancel() // the connection breaks; the clock does not move
	l := h.expectLost("tm-1", "")
	if !slices.Equal(l.Jobs, []string{"job"}) || l.HeartbeatTimeout {
		t.Fatalf("lost %+v, want job listed and no heartbeat timeout", l)
	}
	if tms := h.snapshot(); len(tms) != 0 {
		t.Fatalf("snapshot %+v", tms)
	}

	// A TaskManager closing its side ends its session as well.
	c2 := h.registered("tm-2", 1)
	if err := c2.stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	h.expectLost("tm-2", "closed its session")
}

func TestProtocolViolationAfterRegister(t *testing.T) {
	h := newHarness(t, nil)
	c := h.registered("tm-1", 1)
	c.register(register("tm-1", 1))
	err, _ := c.ended()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "after Register") {
		t.Fatalf("got %v", err)
	}
	h.expectLost("tm-1", "after Register")
}

func TestSlotAssignment(t *testing.T) {
	h := newHarness(t, nil)
	a := h.registered("a", 2)
	b := h.registered("b", 2)

	h.declare("x", 3)
	// Pack: a's two slots, then b's first.
	want := []struct {
		c   *tm
		idx int32
	}{{a, 0}, {a, 1}, {b, 0}}
	allocs := map[string]string{}
	for _, w := range want {
		got := w.c.allocation()
		if got.Index != w.idx || got.JobId != "x" || got.JobMasterAddress != "127.0.0.1:7000" || got.AllocationId == "" {
			t.Fatalf("%s: got %v, want slot %d for x", w.c.id, got, w.idx)
		}
		allocs[fmt.Sprintf("%s%d", w.c.id, w.idx)] = got.AllocationId
	}
	h.quiet(a)
	h.quiet(b)
	if s := h.slotsOf("a") + " " + h.slotsOf("b"); s != "x*x* x*." {
		t.Fatalf("slots %s", s)
	}

	// A report from before the allocation does not free a pending slot;
	// one showing it confirms it.
	a.heartbeat("", "")
	a.heartbeat("x/"+allocs["a0"], "x/"+allocs["a1"])
	b.heartbeat("x/"+allocs["b0"], "")
	h.eventually("confirmed", func() bool { return h.slotsOf("a")+" "+h.slotsOf("b") == "xx x." })

	// The JobMaster rejected b's slot: the TaskManager reports it free and
	// the ResourceManager assigns a slot again, the same one.
	b.heartbeat("", "")
	got := b.allocation()
	if got.Index != 0 || got.AllocationId == allocs["b0"] {
		t.Fatalf("reassignment %v", got)
	}
	b.heartbeat("x/"+got.AllocationId, "")

	// A second job takes the last free slot.
	h.declare("y", 2)
	if got := b.allocation(); got.Index != 1 || got.JobId != "y" {
		t.Fatalf("got %v", got)
	}
	h.quiet(a)

	// Raising the demand assigns nothing more when no slot is free.
	h.declare("x", 4)
	h.quiet(a)
	h.quiet(b)

	// The demand of x ends: its slots are taken back.
	h.declare("x", 0)
	for _, c := range []*tm{a, b} {
		m := c.next(true)
		f := m.GetFreeSlots()
		if f == nil || f.JobId != "x" {
			t.Fatalf("%s: got %v, want free_slots for x", c.id, m)
		}
		if c == a && !slices.Equal(f.AllocationIds, []string{allocs["a0"], allocs["a1"]}) {
			t.Fatalf("a: frees %v", f.AllocationIds)
		}
	}
	// ... and once the TaskManager reports them free they go to y.
	a.heartbeat("", "")
	if got := a.allocation(); got.Index != 0 || got.JobId != "y" {
		t.Fatalf("got %v", got)
	}
	h.quiet(a)
}

func TestSlotAssignmentSpread(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Strategy = scheduler.Spread })
	tms := []*tm{h.registered("a", 2), h.registered("b", 2), h.registered("c", 2)}
	h.declare("x", 3)
	for _, c := range tms {
		if got := c.allocation(); got.Index != 0 {
			t.Fatalf("%s: got %v", c.id, got)
		}
		h.quiet(c)
	}
}

func TestUnconfirmedAssignmentExpires(t *testing.T) {
	h := newHarness(t, nil)
	c := h.registered("tm-1", 1)
	h.declare("x", 1)
	first := c.allocation()
	// The TaskManager keeps reporting the slot free: the assignment stays
	// until heartbeat.timeout, then the slot is assigned again.
	for range 4 {
		h.clock.Advance(interval.Milliseconds())
		h.beat(c, "")
		h.quiet(c)
		if s := h.slotsOf("tm-1"); s != "x*" {
			t.Fatalf("slots %s", s)
		}
	}
	h.clock.Advance(interval.Milliseconds())
	c.heartbeat("")
	again := c.allocation()
	if again.AllocationId == first.AllocationId {
		t.Fatalf("same allocation id %s reassigned", again.AllocationId)
	}
}

func TestSlotReportAdoptsTheTaskManagersView(t *testing.T) {
	h := newHarness(t, nil)
	c := h.registered("tm-1", 3)
	// Slots the ResourceManager did not assign (e.g. reported after it
	// restarted) count for their job.
	c.heartbeat("", "z/alloc-old", "")
	h.eventually("adopted", func() bool { return h.slotsOf("tm-1") == ".z." })
	h.declare("z", 2)
	if got := c.allocation(); got.Index != 0 || got.JobId != "z" {
		t.Fatalf("got %v", got)
	}
	h.quiet(c)
	// Malformed and out-of-range statuses are ignored.
	c.send(&clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Heartbeat{Heartbeat: &clusterpb.Heartbeat{Slots: []*clusterpb.SlotStatus{
		{Index: 7, JobId: "z", AllocationId: "a"}, {Index: 2, JobId: "z"}, {Index: -1},
	}}}})
	h.quiet(c)
	if s := h.slotsOf("tm-1"); s != "z*z." {
		t.Fatalf("slots %s", s)
	}
}

func TestLostTaskManagerSlotsMoveElsewhere(t *testing.T) {
	h := newHarness(t, nil)
	a := h.registered("a", 1)
	b := h.registered("b", 1)
	h.declare("x", 1)
	got := a.allocation()
	a.heartbeat("x/" + got.AllocationId)
	h.quiet(b)
	a.cancel()
	h.expectLost("a", "")
	if got := b.allocation(); got.JobId != "x" {
		t.Fatalf("got %v", got)
	}
}

func TestDriver(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleTimeout = 3 * time.Second })
	events := <-h.driver.events
	h.declare("x", 3) // 2 slots per TaskManager: 2 needed
	h.eventually("required 2", func() bool { r, _ := h.driver.state(); return slices.Equal(r, []int{2}) })

	a := h.registered("a", 2)
	b := h.registered("b", 2)
	c := h.registered("c", 2)
	a0, a1, b0 := a.allocation(), a.allocation(), b.allocation()
	a.heartbeat("x/"+a0.AllocationId, "x/"+a1.AllocationId)
	b.heartbeat("x/"+b0.AllocationId, "")
	h.eventually("confirmed", func() bool { return h.slotsOf("a")+h.slotsOf("b") == "xxx." })
	h.quiet(c)
	if r, rel := h.driver.state(); !slices.Equal(r, []int{2}) || len(rel) != 0 {
		t.Fatalf("required %v released %v", r, rel)
	}
	// c is surplus: released once idle for the timeout, and only once.
	h.clock.Advance((2 * time.Second).Milliseconds())
	h.quiet(c)
	if _, rel := h.driver.state(); len(rel) != 0 {
		t.Fatalf("released %v before the idle timeout", rel)
	}
	h.clock.Advance(time.Second.Milliseconds())
	h.eventually("c released", func() bool { _, rel := h.driver.state(); return slices.Equal(rel, []string{"c"}) })
	h.clock.Advance(time.Second.Milliseconds())
	h.quiet(c)
	if _, rel := h.driver.state(); !slices.Equal(rel, []string{"c"}) {
		t.Fatalf("released %v", rel)
	}

	// The platform reports c's resource stopped: c is lost.
	events.WorkerStopped("c", "container completed with exit code 143")
	h.expectLost("c", "stopped by the platform: container completed with exit code 143")
	// An unknown resource is only logged.
	events.WorkerStopped("never-registered", "exit 1")
	h.noLoss()

	// The demand ends; once the TaskManagers report the slots free nothing
	// is required.
	h.declare("x", 0)
	a.next(true)
	b.next(true)
	a.heartbeat("", "")
	b.heartbeat("", "")
	h.eventually("required 0", func() bool { r, _ := h.driver.state(); return r[len(r)-1] == 0 })
}

func TestDeclareSlotsValidation(t *testing.T) {
	h := newHarness(t, nil)
	tests := []struct {
		d    *clusterpb.SlotDemand
		want string
	}{
		{&clusterpb.SlotDemand{Slots: 1, JobMasterAddress: "h:1"}, "job_id is empty"},
		{&clusterpb.SlotDemand{JobId: "j", Slots: -1}, "slots -1 is negative"},
		{&clusterpb.SlotDemand{JobId: "j", Slots: 2}, `job_master_address "" is not host:port`},
	}
	for _, tt := range tests {
		_, err := h.client().DeclareSlots(context.Background(), tt.d)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DeclareSlots(%v) = %v, want InvalidArgument saying %q", tt.d, err, tt.want)
		}
		// In-process callers see the sentinel.
		_, err = h.rm.DeclareSlots(context.Background(), tt.d)
		if !errors.Is(err, ErrInvalidDemand) {
			t.Errorf("in-process DeclareSlots(%v) = %v, want ErrInvalidDemand", tt.d, err)
		}
	}
	// Ending a demand that was never declared is fine.
	if _, err := h.client().DeclareSlots(context.Background(), &clusterpb.SlotDemand{JobId: "none"}); err != nil {
		t.Fatal(err)
	}
}

func TestStop(t *testing.T) {
	rm, err := New(Config{Clock: clock.NewManual(start), Logger: testLogger(t)}, NewStandalone(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.WaitForHandlers(true))
	clusterpb.RegisterResourceManagerServer(srv, rm)
	go srv.Serve(lis)
	defer srv.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- rm.Run(ctx) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := &harness{t: t, rm: rm, conn: conn}
	c := h.registered("tm-1", 1)
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	err, msgs := c.ended()
	if status.Code(err) != codes.Unavailable || len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1].GetDisconnect().GetReason(), "shutting down") {
		t.Fatalf("got %v after %v", err, msgs)
	}
	if _, err := rm.DeclareSlots(context.Background(), &clusterpb.SlotDemand{JobId: "j"}); !errors.Is(err, ErrStopped) {
		t.Fatalf("DeclareSlots after stop: %v", err)
	}
	if _, err := rm.TaskManagers(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("TaskManagers after stop: %v", err)
	}
	if err := rm.Run(context.Background()); err == nil {
		t.Fatal("second Run succeeded")
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{HeartbeatInterval: 2 * time.Second, HeartbeatTimeout: time.Second, SlotsPerTaskManager: -1, IdleTimeout: -1, Strategy: 9}.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("got %v", err)
	}
	for _, w := range []string{"HeartbeatTimeout 1s: must be longer than HeartbeatInterval 2s", "SlotsPerTaskManager -1", "IdleTimeout", "Strategy 9"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if _, err := New(Config{}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("no driver: %v", err)
	}
}

type failingDriver struct{ *Standalone }

var errPlatform = errors.New("platform gone")

func (failingDriver) Run(context.Context, DriverEvents) error { return errPlatform }

func TestDriverFailureStopsRun(t *testing.T) {
	rm, err := New(Config{Logger: testLogger(t)}, failingDriver{NewStandalone(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rm.Run(context.Background()); !errors.Is(err, errPlatform) {
		t.Fatalf("Run = %v, want the driver's error", err)
	}
}

// TestLostCallbackMayCallBack checks that OnTaskManagerLost runs apart from
// the owner loop: it can ask for a snapshot.
func TestLostCallbackMayCallBack(t *testing.T) {
	seen := make(chan int, 1)
	var h *harness
	h = newHarness(t, func(c *Config) {
		c.OnTaskManagerLost = func(l LostTaskManager) {
			tms, err := h.rm.TaskManagers(context.Background())
			if err != nil {
				t.Error(err)
			}
			seen <- len(tms)
		}
	})
	h.registered("tm-1", 1).cancel()
	select {
	case n := <-seen:
		if n != 0 {
			t.Fatalf("snapshot in the callback lists %d TaskManagers, want 0", n)
		}
	case <-time.After(wait):
		t.Fatal("callback not called")
	}
}

// The ResourceManager keeps the Kerberos login each TaskManager's latest
// heartbeat reports, for the JobManager's GET /metrics.
func TestHeartbeatKerberosStatus(t *testing.T) {
	h := newHarness(t, nil)
	c := h.registered("tm-1", 1)
	kerberosOf := func() *kerberos.Status {
		for _, in := range h.snapshot() {
			if in.ID == "tm-1" {
				return in.Kerberos
			}
		}
		t.Fatal("tm-1 is not registered")
		return nil
	}
	if k := kerberosOf(); k != nil {
		t.Fatalf("before any heartbeat: Kerberos %+v, want none", k)
	}
	const principal = "sluice/tm-1@EXAMPLE.COM"
	for _, tc := range []struct {
		name string
		sent *clusterpb.KerberosStatus
		want *kerberos.Status
	}{
		{"logged in", &clusterpb.KerberosStatus{Principal: principal, TgtExpiry: 1_700_036_000, TgtRenewTill: 1_700_604_800},
			&kerberos.Status{Principal: principal, TGTExpiry: 1_700_036_000, TGTRenewTill: 1_700_604_800}},
		{"re-logged in once, one failure", &clusterpb.KerberosStatus{Principal: principal, TgtExpiry: 1_700_064_800, TgtRenewTill: 1_700_604_800, Relogins: 1, ReloginFailures: 1},
			&kerberos.Status{Principal: principal, TGTExpiry: 1_700_064_800, TGTRenewTill: 1_700_604_800, Relogins: 1, ReloginFailures: 1}},
		{"no login reported", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.seq++
			c.send(&clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Heartbeat{Heartbeat: &clusterpb.Heartbeat{Seq: c.seq, Kerberos: tc.sent}}})
			h.eventually("the heartbeat's login recorded", func() bool {
				k := kerberosOf()
				return (k == nil) == (tc.want == nil) && (k == nil || *k == *tc.want)
			})
		})
	}
	// A lost TaskManager's login goes with it.
	c.cancel()
	h.expectLost("tm-1", "")
	if tms := h.snapshot(); len(tms) != 0 {
		t.Fatalf("snapshot %+v", tms)
	}
}

// The ResourceManager keeps the data port and hardware a TaskManager
// registered with, and the free memory of its latest heartbeat, for GET
// /taskmanagers.
func TestHardware(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect("tm-1")
	r := register("tm-1", 1)
	r.DataPort = 6121
	r.Hardware = &clusterpb.Hardware{CpuCores: 8, PhysicalMemoryBytes: 16 << 30, FreeMemoryBytes: 9 << 30}
	c.register(r)
	c.next(false)
	infoOf := func() TaskManagerInfo {
		for _, in := range h.snapshot() {
			if in.ID == "tm-1" {
				return in
			}
		}
		t.Fatal("tm-1 is not registered")
		return TaskManagerInfo{}
	}
	for _, step := range []struct {
		name string
		sent *clusterpb.Hardware // in a heartbeat; nil: registration only
		want Hardware
	}{
		{"registered", nil, Hardware{CPUCores: 8, PhysicalMemoryBytes: 16 << 30, FreeMemoryBytes: 9 << 30}},
		{"a heartbeat with less free memory", &clusterpb.Hardware{CpuCores: 8, PhysicalMemoryBytes: 16 << 30, FreeMemoryBytes: 3 << 30},
			Hardware{CPUCores: 8, PhysicalMemoryBytes: 16 << 30, FreeMemoryBytes: 3 << 30}},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.sent != nil {
				c.seq++
				c.send(&clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Heartbeat{Heartbeat: &clusterpb.Heartbeat{Seq: c.seq, Hardware: step.sent}}})
			}
			h.eventually("the hardware recorded", func() bool { return infoOf().Hardware == step.want })
			if got := infoOf().DataPort; got != 6121 {
				t.Errorf("data port %d, want 6121", got)
			}
		})
	}
	// A heartbeat without hardware (an older TaskManager) keeps what was
	// reported.
	h.beat(c, "")
	if got := infoOf().Hardware; got.CPUCores != 8 || got.FreeMemoryBytes != 3<<30 {
		t.Errorf("after a heartbeat without hardware: %+v", got)
	}
}

// TestWorkerExited checks that a registered TaskManager's report of a
// worker's exit reaches OnWorkerExited, named after the TaskManager, and
// leaves the session open.
func TestWorkerExited(t *testing.T) {
	exited := make(chan ExitedWorker, 1)
	h := newHarness(t, func(c *Config) { c.OnWorkerExited = func(e ExitedWorker) { exited <- e } })
	c := h.registered("tm-1", 1)
	c.send(&clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_WorkerExited{WorkerExited: &clusterpb.WorkerExited{
		JobId: "job", Attempt: 2, WorkerId: "job-2-tm-1", Status: "exit status 2", StderrTail: "panic: boom"}}})
	want := ExitedWorker{TaskManager: "tm-1", Job: "job", Attempt: 2, Worker: "job-2-tm-1", Status: "exit status 2", StderrTail: "panic: boom"}
	select {
	case got := <-exited:
		if got != want {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnWorkerExited call")
	}
	h.noLoss()
}

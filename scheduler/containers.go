package scheduler

// YARN container bookkeeping of the ApplicationMaster: how many TaskManager
// containers to ask for, which allocations to launch, which to give back,
// and how fast to heartbeat. PlanContainers is a pure function; the YARN
// resource driver (cluster/yarndriver) feeds it what the ResourceManager and
// NodeManagers reported and applies its plan through package yarn.
//
// YARN asks are absolute: an ask of n containers at a priority replaces the
// previous one, and the ResourceManager lowers its count by one for every
// container it allocates at that priority. Containers keeps the count the
// ResourceManager holds (Pending) so that an ask is only sent when the
// wanted count differs from it; re-sending an unchanged ask would reset the
// ResourceManager's count and yield containers twice.

// ContainerPhase is where a held container is in its life.
type ContainerPhase int

// Container phases.
const (
	// ContainerStarting: allocated and being launched on its NodeManager.
	ContainerStarting ContainerPhase = iota + 1
	// ContainerRunning: its NodeManager accepted the launch.
	ContainerRunning
	// ContainerReleasing: given back to the ResourceManager (surplus, failed
	// launch, or stopped on request); its completion is not yet seen.
	ContainerReleasing
)

func (p ContainerPhase) String() string {
	switch p {
	case ContainerStarting:
		return "starting"
	case ContainerRunning:
		return "running"
	case ContainerReleasing:
		return "releasing"
	}
	return "phase?"
}

// HeldContainer is a container the application holds.
type HeldContainer struct {
	// Priority it was allocated at: the TaskManager spec it serves.
	Priority int32
	Phase    ContainerPhase
}

// Containers is the ApplicationMaster's view of its TaskManager containers.
// The zero value is empty and ready to use. PlanContainers never modifies a
// Containers it is given.
type Containers struct {
	// Pending is, per priority, the number of containers asked for and not
	// yet allocated: the count the ResourceManager holds after the last
	// absolute ask, less the allocations received since. Absent means 0.
	Pending map[int32]int
	// Held maps container ids to the containers the application holds.
	Held map[string]HeldContainer
}

// Active counts the containers at priority p that are starting or running.
func (c Containers) Active(p int32) int {
	n := 0
	for _, h := range c.Held {
		if h.Priority == p && h.Phase != ContainerReleasing {
			n++
		}
	}
	return n
}

func (c Containers) clone() Containers {
	out := Containers{Pending: make(map[int32]int, len(c.Pending)), Held: make(map[string]HeldContainer, len(c.Held))}
	for p, n := range c.Pending {
		out.Pending[p] = n
	}
	for id, h := range c.Held {
		out.Held[id] = h
	}
	return out
}

// AllocatedContainer is a container the ResourceManager allocated.
type AllocatedContainer struct {
	ID       string
	Priority int32
}

// ContainerEvents is what happened since the last plan. PlanContainers
// applies the fields in the order they are declared.
type ContainerEvents struct {
	// Required is, per priority (one per TaskManager spec), how many
	// TaskManager containers the application needs in total. A priority
	// absent from the map needs none.
	Required map[int32]int
	// Completed are containers the ResourceManager reported complete (exit,
	// preemption, lost node, or released). Unknown ids are ignored.
	Completed []string
	// Stop are containers the ResourceManager of the cluster (Sluice's)
	// asked to stop: idle or surplus TaskManagers. They are released.
	Stop []string
	// LaunchFailed are starting containers their NodeManager refused to
	// start. They are released, and replaced if still required.
	LaunchFailed []string
	// Launched are starting containers their NodeManager started.
	Launched []string
	// Allocated are new allocations, in the order the ResourceManager sent
	// them.
	Allocated []AllocatedContainer
	// Resynced reports that the ResourceManager lost the application's
	// state (it restarted): every ask is sent again.
	Resynced bool
	// HoldAsks keeps the asks from growing (StartFailures paused them):
	// containers already asked for stay asked for, but neither a new
	// requirement nor a completed container is asked for yet; asks still
	// shrink. The next plan without it asks for what is missing.
	HoldAsks bool
}

// ContainerPlan is what to do about the events.
type ContainerPlan struct {
	// Asks are the absolute container counts to send, per priority; only
	// changed ones (all of them after a resync) are present. A count of 0
	// withdraws the ask.
	Asks map[int32]int
	// Launch are allocated containers to start a TaskManager in, in
	// allocation order.
	Launch []AllocatedContainer
	// Release are containers to give back to the ResourceManager: surplus
	// allocations, failed launches and containers asked to stop.
	Release []string
	// Stopped are containers that were starting or running a TaskManager
	// and completed: the ResourceManager of the cluster must learn that the
	// worker is gone. Containers being released are not reported again.
	Stopped []string
	// FastHeartbeat is set while containers are pending: heartbeat at the
	// container-request interval rather than the normal one.
	FastHeartbeat bool
}

// PlanContainers applies ev to cur and returns the new bookkeeping and the
// plan to carry out. It is a pure function: cur is not modified.
//
// A completed container that was starting or running is reported in Stopped
// and, being no longer active, is replaced by a new ask if still required.
// An allocation is launched while fewer containers than required are active
// at its priority, and released otherwise (surplus, or a priority no longer
// required). For every priority the wanted count is Required minus Active,
// and an ask is sent when it differs from Pending.
func PlanContainers(cur Containers, ev ContainerEvents) (Containers, ContainerPlan) {
	next := cur.clone()
	var plan ContainerPlan

	for _, id := range ev.Completed {
		h, ok := next.Held[id]
		if !ok {
			continue
		}
		if h.Phase != ContainerReleasing {
			plan.Stopped = append(plan.Stopped, id)
		}
		delete(next.Held, id)
	}
	release := func(id string, from ...ContainerPhase) {
		h, ok := next.Held[id]
		if !ok || !phaseIn(h.Phase, from) {
			return
		}
		h.Phase = ContainerReleasing
		next.Held[id] = h
		plan.Release = append(plan.Release, id)
	}
	for _, id := range ev.Stop {
		release(id, ContainerStarting, ContainerRunning)
	}
	for _, id := range ev.LaunchFailed {
		release(id, ContainerStarting)
	}
	for _, id := range ev.Launched {
		if h, ok := next.Held[id]; ok && h.Phase == ContainerStarting {
			h.Phase = ContainerRunning
			next.Held[id] = h
		}
	}

	active := make(map[int32]int)
	for _, h := range next.Held {
		if h.Phase != ContainerReleasing {
			active[h.Priority]++
		}
	}
	for _, a := range ev.Allocated {
		if _, dup := next.Held[a.ID]; dup {
			continue
		}
		if next.Pending[a.Priority] > 0 {
			next.Pending[a.Priority]--
		}
		if active[a.Priority] < ev.Required[a.Priority] {
			next.Held[a.ID] = HeldContainer{Priority: a.Priority, Phase: ContainerStarting}
			active[a.Priority]++
			plan.Launch = append(plan.Launch, a)
			continue
		}
		next.Held[a.ID] = HeldContainer{Priority: a.Priority, Phase: ContainerReleasing}
		plan.Release = append(plan.Release, a.ID)
	}

	asks := make(map[int32]int)
	consider := func(p int32) {
		want := max(0, ev.Required[p]-active[p])
		if ev.HoldAsks {
			want = min(want, next.Pending[p])
		}
		if want != next.Pending[p] || (ev.Resynced && want > 0) {
			asks[p] = want
		}
		if want > 0 {
			next.Pending[p] = want
		} else {
			delete(next.Pending, p)
		}
	}
	for p := range ev.Required {
		consider(p)
	}
	for p := range cur.Pending {
		if _, ok := ev.Required[p]; !ok {
			consider(p)
		}
	}
	if len(asks) > 0 {
		plan.Asks = asks
	}
	for _, n := range next.Pending {
		if n > 0 {
			plan.FastHeartbeat = true
		}
	}
	return next, plan
}

func phaseIn(p ContainerPhase, set []ContainerPhase) bool {
	for _, s := range set {
		if p == s {
			return true
		}
	}
	return false
}

package resourcemanager

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/scheduler"
)

// Config configures a ResourceManager. The zero value of a field takes the
// default it documents.
type Config struct {
	// ID names this ResourceManager to TaskManagers (Registered's
	// resource_manager_id). Default: a random id.
	ID string
	// HeartbeatInterval is how often the ResourceManager sends heartbeats
	// to each TaskManager, and the interval it tells TaskManagers to send
	// theirs at. Default: heartbeat.interval's (1 s).
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long a TaskManager may stay silent before it
	// is lost; also how long a TaskManager has to send Register after
	// connecting, and how long an AllocateSlot may stay unconfirmed by the
	// TaskManager's slot reports. Default: heartbeat.timeout's (5 s).
	HeartbeatTimeout time.Duration
	// SlotsPerTaskManager is the number of slots a new TaskManager brings,
	// for counting the TaskManagers the demand needs. Default:
	// taskmanager.numberOfTaskSlots's (1).
	SlotsPerTaskManager int
	// Strategy places slots: scheduler.Pack (default, as
	// cluster.evenly-spread-out-slots: false) or scheduler.Spread.
	Strategy scheduler.Strategy
	// IdleTimeout is how long a TaskManager the demand does not need may
	// hold no slot before the driver is asked to release it. Default:
	// resourcemanager.taskmanager-timeout's (30 s).
	IdleTimeout time.Duration
	// OnTaskManagerLost, if set, is called once for each registered
	// TaskManager that is lost (connection closed, heartbeat timeout,
	// stopped by the platform). Calls are made one at a time on a goroutine
	// of the ResourceManager, in the order of the losses; the callback may
	// call the ResourceManager's methods.
	OnTaskManagerLost func(LostTaskManager)
	// OnWorkerExited, if set, is called for each worker a registered
	// TaskManager reports exited without being asked to stop. Calls are
	// made one at a time on a goroutine of the ResourceManager, in the
	// order of the reports; the callback may call the ResourceManager's
	// methods.
	OnWorkerExited func(ExitedWorker)
	// Clock drives heartbeats and timeouts. Default: clock.System{}.
	Clock clock.Clock
	// Logger receives the ResourceManager's logs. Default: discarded.
	Logger *slog.Logger
}

// ConfigFrom reads a Config from a configuration's heartbeat.interval,
// heartbeat.timeout, taskmanager.numberOfTaskSlots,
// cluster.evenly-spread-out-slots and resourcemanager.taskmanager-timeout.
func ConfigFrom(c *conf.Configuration) Config {
	cfg := Config{
		HeartbeatInterval:   conf.Get(c, conf.HeartbeatInterval),
		HeartbeatTimeout:    conf.Get(c, conf.HeartbeatTimeout),
		SlotsPerTaskManager: conf.Get(c, conf.TaskManagerNumberOfTaskSlots),
		IdleTimeout:         conf.Get(c, conf.ResourceManagerTaskManagerTimeout),
	}
	if conf.Get(c, conf.EvenlySpreadOutSlots) {
		cfg.Strategy = scheduler.Spread
	}
	return cfg
}

func (c Config) withDefaults() Config {
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = conf.HeartbeatInterval.Default()
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = conf.HeartbeatTimeout.Default()
	}
	if c.SlotsPerTaskManager == 0 {
		c.SlotsPerTaskManager = conf.TaskManagerNumberOfTaskSlots.Default()
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = conf.ResourceManagerTaskManagerTimeout.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// ErrInvalidConfig is matched by the error of Validate.
var ErrInvalidConfig = errors.New("resourcemanager: invalid configuration")

// Validate reports every problem of c (after defaults) at once.
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []string
	if c.HeartbeatInterval < time.Millisecond {
		problems = append(problems, fmt.Sprintf("HeartbeatInterval %v: must be at least 1 ms", c.HeartbeatInterval))
	}
	if c.HeartbeatTimeout <= c.HeartbeatInterval {
		problems = append(problems, fmt.Sprintf("HeartbeatTimeout %v: must be longer than HeartbeatInterval %v", c.HeartbeatTimeout, c.HeartbeatInterval))
	}
	if c.SlotsPerTaskManager < 1 {
		problems = append(problems, fmt.Sprintf("SlotsPerTaskManager %d: must be at least 1", c.SlotsPerTaskManager))
	}
	if c.IdleTimeout < 0 {
		problems = append(problems, fmt.Sprintf("IdleTimeout %v: must not be negative", c.IdleTimeout))
	}
	if c.Strategy != scheduler.Pack && c.Strategy != scheduler.Spread {
		problems = append(problems, fmt.Sprintf("Strategy %d: must be scheduler.Pack or scheduler.Spread", c.Strategy))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
}

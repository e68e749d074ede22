package yarn

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ErrBadID is wrapped by errors parsing the text form of a YARN id.
var ErrBadID = errors.New("yarn: malformed id")

// ApplicationID identifies an application: the ResourceManager's start time
// and a sequence number. Its text form is application_<ts>_<seq>, the
// sequence number zero-padded to at least four digits.
type ApplicationID struct {
	ClusterTimestamp int64
	ID               int32
}

func (a ApplicationID) String() string {
	return fmt.Sprintf("application_%d_%04d", a.ClusterTimestamp, a.ID)
}

// IsZero reports whether a is the zero id.
func (a ApplicationID) IsZero() bool { return a == ApplicationID{} }

// ApplicationAttemptID identifies one attempt of an application. Text form:
// appattempt_<ts>_<seq>_<attempt>, the attempt zero-padded to six digits.
type ApplicationAttemptID struct {
	Application ApplicationID
	Attempt     int32
}

func (a ApplicationAttemptID) String() string {
	return fmt.Sprintf("appattempt_%d_%04d_%06d", a.Application.ClusterTimestamp, a.Application.ID, a.Attempt)
}

// containerIDBits is the width of the per-attempt sequence number inside
// ContainerID.ID; the bits above it hold the ResourceManager epoch.
const containerIDBits = 40

// ContainerID identifies a container. ID packs the ResourceManager epoch
// (high 24 bits) and the container's sequence number (low 40 bits), as
// Hadoop does. Text form:
// container_[e<epoch>_]<ts>_<app>_<attempt>_<seq>, with the app number
// padded to four digits, the attempt to two and the sequence to six.
type ContainerID struct {
	Attempt ApplicationAttemptID
	ID      int64
}

// Epoch is the ResourceManager epoch the container was allocated in.
func (c ContainerID) Epoch() int64 { return c.ID >> containerIDBits }

// Sequence is the container's number within its attempt and epoch.
func (c ContainerID) Sequence() int64 { return c.ID & (1<<containerIDBits - 1) }

func (c ContainerID) String() string {
	var b strings.Builder
	b.WriteString("container_")
	if e := c.Epoch(); e > 0 {
		fmt.Fprintf(&b, "e%02d_", e)
	}
	fmt.Fprintf(&b, "%d_%04d_%02d_%06d", c.Attempt.Application.ClusterTimestamp, c.Attempt.Application.ID, c.Attempt.Attempt, c.Sequence())
	return b.String()
}

// NodeID is a NodeManager's host and RPC port.
type NodeID struct {
	Host string
	Port int32
}

func (n NodeID) String() string { return net.JoinHostPort(n.Host, strconv.Itoa(int(n.Port))) }

// ParseApplicationID parses application_<ts>_<seq>.
func ParseApplicationID(s string) (ApplicationID, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 3 || parts[0] != "application" {
		return ApplicationID{}, fmt.Errorf("%w: %q is not application_<timestamp>_<sequence>", ErrBadID, s)
	}
	return parseAppParts(s, parts[1], parts[2])
}

// ParseApplicationAttemptID parses appattempt_<ts>_<seq>_<attempt>.
func ParseApplicationAttemptID(s string) (ApplicationAttemptID, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 4 || parts[0] != "appattempt" {
		return ApplicationAttemptID{}, fmt.Errorf("%w: %q is not appattempt_<timestamp>_<sequence>_<attempt>", ErrBadID, s)
	}
	app, err := parseAppParts(s, parts[1], parts[2])
	if err != nil {
		return ApplicationAttemptID{}, err
	}
	n, err := parseNum(s, "attempt", parts[3], 31)
	if err != nil {
		return ApplicationAttemptID{}, err
	}
	return ApplicationAttemptID{Application: app, Attempt: int32(n)}, nil
}

// ParseContainerID parses container_[e<epoch>_]<ts>_<app>_<attempt>_<seq>.
func ParseContainerID(s string) (ContainerID, error) {
	parts := strings.Split(s, "_")
	if len(parts) < 5 || parts[0] != "container" {
		return ContainerID{}, fmt.Errorf("%w: %q is not container_[e<epoch>_]<timestamp>_<app>_<attempt>_<sequence>", ErrBadID, s)
	}
	parts = parts[1:]
	var epoch int64
	if strings.HasPrefix(parts[0], "e") {
		e, err := parseNum(s, "epoch", parts[0][1:], 24)
		if err != nil {
			return ContainerID{}, err
		}
		epoch, parts = e, parts[1:]
	}
	if len(parts) != 4 {
		return ContainerID{}, fmt.Errorf("%w: %q has %d fields after the prefix, want 4", ErrBadID, s, len(parts))
	}
	app, err := parseAppParts(s, parts[0], parts[1])
	if err != nil {
		return ContainerID{}, err
	}
	attempt, err := parseNum(s, "attempt", parts[2], 31)
	if err != nil {
		return ContainerID{}, err
	}
	seq, err := parseNum(s, "container sequence", parts[3], containerIDBits)
	if err != nil {
		return ContainerID{}, err
	}
	return ContainerID{
		Attempt: ApplicationAttemptID{Application: app, Attempt: int32(attempt)},
		ID:      epoch<<containerIDBits | seq,
	}, nil
}

// ParseNodeID parses host:port.
func ParseNodeID(s string) (NodeID, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return NodeID{}, fmt.Errorf("%w: node id %q is not host:port", ErrBadID, s)
	}
	p, err := parseNum(s, "port", port, 31)
	if err != nil {
		return NodeID{}, err
	}
	return NodeID{Host: host, Port: int32(p)}, nil
}

func parseAppParts(s, ts, seq string) (ApplicationID, error) {
	t, err := parseNum(s, "cluster timestamp", ts, 63)
	if err != nil {
		return ApplicationID{}, err
	}
	n, err := parseNum(s, "application sequence", seq, 31)
	if err != nil {
		return ApplicationID{}, err
	}
	return ApplicationID{ClusterTimestamp: t, ID: int32(n)}, nil
}

// parseNum parses a non-negative decimal that fits in bits bits.
func parseNum(s, what, v string, bits int) (int64, error) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, fmt.Errorf("%w: %q: %s %q is not a decimal number", ErrBadID, s, what, v)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || (bits < 63 && n >= int64(1)<<bits) {
		return 0, fmt.Errorf("%w: %q: %s %q is out of range", ErrBadID, s, what, v)
	}
	return n, nil
}

package runner

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// Metric types whose values the runner adds up across bundles; any
// other type keeps its latest value.
const (
	typeSumInt64     = "beam:metrics:sum_int64:v1"
	typeSumDouble    = "beam:metrics:sum_double:v1"
	typeDistInt64    = "beam:metrics:distribution_int64:v1"
	typeDistDouble   = "beam:metrics:distribution_double:v1"
	typeLatestInt64  = "beam:metrics:latest_int64:v1"
	typeLatestDouble = "beam:metrics:latest_double:v1"
)

// Metrics aggregates the MonitoringInfos the harnesses report with each
// bundle, by URN and labels. Safe for concurrent use.
type Metrics struct {
	mu    sync.Mutex
	infos map[string]*pipepb.MonitoringInfo
}

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics { return &Metrics{infos: map[string]*pipepb.MonitoringInfo{}} }

func metricKey(mi *pipepb.MonitoringInfo) string {
	labels := make([]string, 0, len(mi.GetLabels()))
	for k, v := range mi.GetLabels() {
		labels = append(labels, k+"="+v)
	}
	slices.Sort(labels)
	return mi.GetUrn() + "|" + mi.GetType() + "|" + strings.Join(labels, ",")
}

// Add merges one bundle's infos.
func (m *Metrics) Add(infos []*pipepb.MonitoringInfo) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mi := range infos {
		k := metricKey(mi)
		old, ok := m.infos[k]
		if !ok {
			m.infos[k] = proto.Clone(mi).(*pipepb.MonitoringInfo)
			continue
		}
		if p, ok := merge(mi.GetType(), old.GetPayload(), mi.GetPayload()); ok {
			old.Payload = p
		}
	}
}

// Snapshot returns the aggregated infos, sorted.
func (m *Metrics) Snapshot() []*pipepb.MonitoringInfo {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.infos))
	for k := range m.infos {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*pipepb.MonitoringInfo, len(keys))
	for i, k := range keys {
		out[i] = proto.Clone(m.infos[k]).(*pipepb.MonitoringInfo)
	}
	return out
}

func varints(b []byte, n int) ([]int64, bool) {
	vs := make([]int64, n)
	for i := range vs {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, false
		}
		vs[i], b = int64(v), b[k:]
	}
	return vs, len(b) == 0
}

func appendVarints(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

func doubles(b []byte, n int) ([]float64, bool) {
	if len(b) != 8*n {
		return nil, false
	}
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = math.Float64frombits(binary.BigEndian.Uint64(b[8*i:]))
	}
	return vs, true
}

// merge combines two payloads of a metric type (Beam's encodings: varint
// int64s, big-endian doubles); false when it does not know how, and the
// newer value wins.
func merge(typ string, a, b []byte) ([]byte, bool) {
	switch typ {
	case typeSumInt64:
		x, ok1 := varints(a, 1)
		y, ok2 := varints(b, 1)
		if ok1 && ok2 {
			return appendVarints(x[0] + y[0]), true
		}
	case typeDistInt64: // count, sum, min, max
		x, ok1 := varints(a, 4)
		y, ok2 := varints(b, 4)
		if ok1 && ok2 {
			return appendVarints(x[0]+y[0], x[1]+y[1], min(x[2], y[2]), max(x[3], y[3])), true
		}
	case typeSumDouble:
		x, ok1 := doubles(a, 1)
		y, ok2 := doubles(b, 1)
		if ok1 && ok2 {
			return binary.BigEndian.AppendUint64(nil, math.Float64bits(x[0]+y[0])), true
		}
	case typeDistDouble: // count (varint), sum, min, max (doubles)
		cx, kx := binary.Uvarint(a)
		cy, ky := binary.Uvarint(b)
		if kx > 0 && ky > 0 {
			x, ok1 := doubles(a[kx:], 3)
			y, ok2 := doubles(b[ky:], 3)
			if ok1 && ok2 {
				out := binary.AppendUvarint(nil, cx+cy)
				for _, v := range []float64{x[0] + y[0], math.Min(x[1], y[1]), math.Max(x[2], y[2])} {
					out = binary.BigEndian.AppendUint64(out, math.Float64bits(v))
				}
				return out, true
			}
		}
	case typeLatestInt64, typeLatestDouble: // timestamp (varint ms) first: the later wins
		ta, ka := binary.Uvarint(a)
		tb, kb := binary.Uvarint(b)
		if ka > 0 && kb > 0 && int64(ta) > int64(tb) {
			return a, true
		}
	}
	return b, true
}

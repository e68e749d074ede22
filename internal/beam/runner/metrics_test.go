package runner

import (
	"encoding/binary"
	"math"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

func TestMetricsAggregate(t *testing.T) {
	dbl := func(vs ...float64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	counter := func(v int64) *pipepb.MonitoringInfo {
		return &pipepb.MonitoringInfo{Urn: "beam:metric:user:sum_int64:v1", Type: typeSumInt64, Labels: map[string]string{"NAME": "n", "PTRANSFORM": "t"}, Payload: appendVarints(v)}
	}
	dist := func(vs ...int64) *pipepb.MonitoringInfo {
		return &pipepb.MonitoringInfo{Urn: "beam:metric:user:distribution_int64:v1", Type: typeDistInt64, Labels: map[string]string{"NAME": "d"}, Payload: appendVarints(vs...)}
	}
	m := NewMetrics()
	m.Add([]*pipepb.MonitoringInfo{counter(3), dist(2, 10, 4, 6)})
	m.Add([]*pipepb.MonitoringInfo{counter(-1), dist(1, 1, 1, 1), {Urn: "x", Type: typeSumDouble, Payload: dbl(1.5)}})
	m.Add([]*pipepb.MonitoringInfo{{Urn: "x", Type: typeSumDouble, Payload: dbl(2)}})
	got := map[string][]byte{}
	for _, mi := range m.Snapshot() {
		got[mi.GetUrn()] = mi.GetPayload()
	}
	for urn, want := range map[string][]byte{
		"beam:metric:user:sum_int64:v1":          appendVarints(2),
		"beam:metric:user:distribution_int64:v1": appendVarints(3, 11, 1, 6),
		"x":                                      dbl(3.5),
	} {
		if string(got[urn]) != string(want) {
			t.Errorf("%s: %x, want %x", urn, got[urn], want)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d metrics, want 3", len(got))
	}
}

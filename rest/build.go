package rest

import (
	"math"
	"slices"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/runtime/graph"
)

// Constructors of messages for Backend implementations.

// NewCheckpointingStatistics builds the answer of GET
// /jobs/:jobid/checkpoints from the counts, the checkpoint history (newest
// first, as Flink lists it) and the last restore (nil: none). It sets each
// entry's ClassName from its Status, picks the latest completed checkpoint,
// savepoint and failure from the history, and summarises sizes and
// durations over the completed entries of the history.
func NewCheckpointingStatistics(counts restapi.CheckpointCounts, history []restapi.CheckpointStatistics, restored *restapi.RestoredCheckpoint) *restapi.CheckpointingStatistics {
	s := &restapi.CheckpointingStatistics{Counts: counts, History: make([]restapi.CheckpointStatistics, len(history))}
	s.Latest.Restored = restored
	var completed []restapi.CheckpointStatistics
	for i, h := range history {
		switch h.Status {
		case restapi.CheckpointCompleted:
			h.ClassName = "completed"
			if h.Discarded == nil {
				// Flink's required member; Sluice reports the checkpoints it
				// keeps, none discarded.
				h.Discarded = new(bool)
			}
		case restapi.CheckpointFailed:
			h.ClassName = "failed"
		default:
			h.ClassName = "in_progress"
		}
		if h.Tasks == nil {
			h.Tasks = map[string]restapi.TaskCheckpointStatistics{}
		}
		s.History[i] = h
		e := &s.History[i]
		switch {
		case h.Status == restapi.CheckpointCompleted && h.IsSavepoint:
			if s.Latest.Savepoint == nil {
				s.Latest.Savepoint = e
			}
			completed = append(completed, h)
		case h.Status == restapi.CheckpointCompleted:
			if s.Latest.Completed == nil {
				s.Latest.Completed = e
			}
			completed = append(completed, h)
		case h.Status == restapi.CheckpointFailed:
			if s.Latest.Failed == nil {
				s.Latest.Failed = e
			}
		}
	}
	of := func(f func(restapi.CheckpointStatistics) int64) restapi.StatsSummary {
		v := make([]int64, len(completed))
		for i, c := range completed {
			v[i] = f(c)
		}
		return Summarize(v)
	}
	s.Summary = restapi.CheckpointSummary{
		CheckpointedSize:  of(func(c restapi.CheckpointStatistics) int64 { return c.CheckpointedSize }),
		StateSize:         of(func(c restapi.CheckpointStatistics) int64 { return c.StateSize }),
		EndToEndDuration:  of(func(c restapi.CheckpointStatistics) int64 { return c.EndToEndDuration }),
		AlignmentBuffered: of(func(c restapi.CheckpointStatistics) int64 { return c.AlignmentBuffered }),
		ProcessedData:     of(func(c restapi.CheckpointStatistics) int64 { return c.ProcessedData }),
		PersistedData:     of(func(c restapi.CheckpointStatistics) int64 { return c.PersistedData }),
	}
	return s
}

// Summarize returns min, max, mean and percentiles of values (all zero
// when there are none). Percentiles interpolate linearly between the
// nearest ranks.
func Summarize(values []int64) restapi.StatsSummary {
	if len(values) == 0 {
		return restapi.StatsSummary{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += float64(x)
	}
	q := func(p float64) float64 {
		pos := p * float64(len(v)-1)
		lo := int(math.Floor(pos))
		hi := min(lo+1, len(v)-1)
		frac := pos - float64(lo)
		return float64(v[lo]) + frac*float64(v[hi]-v[lo])
	}
	return restapi.StatsSummary{
		Min: v[0], Max: v[len(v)-1], Avg: int64(math.Round(sum / float64(len(v)))),
		P50: q(0.5), P90: q(0.9), P95: q(0.95), P99: q(0.99), P999: q(0.999),
	}
}

// NewJobPlan renders a plan in Flink's JSON form: one node per chain (a
// vertex), named by the chain, with the exchanges into it as inputs.
// vertexID gives each chain its vertex ID (e.g. DeriveID(jobID, head
// operator ID)); jobType is STREAMING or BATCH.
func NewJobPlan(jobID, jobType string, p *graph.Plan, vertexID func(*graph.Chain) string) restapi.JobPlan {
	jp := restapi.JobPlan{JobID: jobID, Type: jobType, Nodes: make([]restapi.PlanNode, 0, len(p.Chains))}
	if p.Graph != nil {
		jp.Name = p.Graph.Name
	}
	ids := make([]string, len(p.Chains))
	for i, c := range p.Chains {
		ids[i] = vertexID(c)
	}
	for i, c := range p.Chains {
		n := restapi.PlanNode{
			ID: ids[i], Parallelism: c.Parallelism, Description: c.Name,
			OptimizerProperties: map[string]any{},
		}
		for _, e := range p.Exchanges {
			if p.ChainOf[e.To] != c.ID {
				continue
			}
			n.Inputs = append(n.Inputs, restapi.PlanInput{
				Num: len(n.Inputs), ID: ids[p.ChainOf[e.From]],
				ShipStrategy: string(e.Partitioning), Exchange: "pipelined_bounded",
			})
		}
		jp.Nodes = append(jp.Nodes, n)
	}
	return jp
}

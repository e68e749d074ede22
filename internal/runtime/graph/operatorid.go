package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// OperatorIDs gives every node the identifier its state is stored under in
// checkpoints and savepoints. A node with a UID is "uid:<UID>". Others get
// a generated ID hashed from the node's kind and name, the IDs of its
// inputs and its position among identical siblings — stable across runs of
// the same program and across parallelism changes, but not across changes
// of the graph's shape, which is why stateful operators should have UIDs.
func (g *JobGraph) OperatorIDs() map[NodeID]string {
	ids := map[NodeID]string{}
	seen := map[string]int{}
	for _, n := range g.TopoOrder() {
		if n.UID != "" {
			ids[n.ID] = "uid:" + n.UID
			continue
		}
		var ins []string
		for _, e := range g.InEdges(n.ID) {
			ins = append(ins, fmt.Sprintf("%d/%s/%s", e.Input, e.SideOutput, ids[e.From]))
		}
		sort.Strings(ins)
		base := n.Kind + "\x00" + n.Name + "\x00" + strings.Join(ins, "\x00")
		dup := seen[base]
		seen[base]++
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", base, dup)))
		ids[n.ID] = "gen:" + hex.EncodeToString(sum[:8])
	}
	return ids
}

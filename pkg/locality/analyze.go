package locality

// Request is one request of a trace, in the trace's order: the instance it
// was served by and the items (adapters or models) it needs resident.
type Request struct {
	Instance uint32
	Items    []uint32
}

// Run is one cache configuration's counts.
type Run struct {
	Slots  int    `json:"slots"`
	Policy Policy `json:"policy"`
	Counts
	HitRatio float64 `json:"hit_ratio"`
}

// InstanceReport is one instance's figures: its own cache of each size.
type InstanceReport struct {
	Instance uint32 `json:"-"`
	Requests int    `json:"requests"`
	Accesses int    `json:"accesses"`
	Distinct int    `json:"distinct"`
	Runs     []Run  `json:"runs"`
}

// Report is what Analyze finds.
type Report struct {
	Requests int `json:"requests"`
	Accesses int `json:"accesses"`
	// Distinct is the number of distinct items: the cold loads no cache
	// avoids.
	Distinct int `json:"distinct"`
	// Overall is one cache shared by every request, per configuration.
	Overall []Run `json:"overall"`
	// Instances holds every instance with a cache of its own (nil unless
	// asked for), in order of instance id; InstanceTotal sums their runs.
	Instances     []InstanceReport `json:"-"`
	InstanceTotal []Run            `json:"instances_total,omitempty"`
}

// Analyze simulates, for every cache size in slots and policy in policies,
// one cache shared by all requests and, with perInstance, one cache per
// instance (nInstances instances, ids 0…nInstances−1).
func Analyze(reqs []Request, nInstances int, slots []int, policies []Policy, perInstance bool) Report {
	var all []uint32
	for _, r := range reqs {
		all = append(all, r.Items...)
	}
	rep := Report{Requests: len(reqs), Accesses: len(all), Distinct: distinct(all)}
	runs := func(acc []uint32) []Run {
		out := make([]Run, 0, len(slots)*len(policies))
		for _, n := range slots {
			for _, p := range policies {
				c := Simulate(acc, n, p)
				out = append(out, Run{Slots: n, Policy: p, Counts: c, HitRatio: c.HitRatio()})
			}
		}
		return out
	}
	rep.Overall = runs(all)
	if !perInstance {
		return rep
	}
	per := make([][]uint32, nInstances)
	count := make([]int, nInstances)
	for _, r := range reqs {
		if int(r.Instance) >= nInstances {
			continue
		}
		per[r.Instance] = append(per[r.Instance], r.Items...)
		count[r.Instance]++
	}
	rep.Instances = make([]InstanceReport, 0, nInstances)
	rep.InstanceTotal = make([]Run, len(slots)*len(policies))
	for id, acc := range per {
		if count[id] == 0 {
			continue
		}
		ir := InstanceReport{Instance: uint32(id), Requests: count[id], Accesses: len(acc), Distinct: distinct(acc), Runs: runs(acc)}
		for k, r := range ir.Runs {
			tot := &rep.InstanceTotal[k]
			tot.Slots, tot.Policy = r.Slots, r.Policy
			tot.Counts.Add(r.Counts)
		}
		rep.Instances = append(rep.Instances, ir)
	}
	for k := range rep.InstanceTotal {
		rep.InstanceTotal[k].HitRatio = rep.InstanceTotal[k].Counts.HitRatio()
	}
	return rep
}

// distinct is the number of distinct items of acc.
func distinct(acc []uint32) int {
	seen := map[uint32]bool{}
	for _, it := range acc {
		seen[it] = true
	}
	return len(seen)
}

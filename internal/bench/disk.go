package main

import (
	"fmt"
)

// Figure 14: the record on disk, from the record's Go benchmarks. 14a: a record whose captured
// output grew past its total budget (160 MiB written against 96 MiB) is opened, which prunes it;
// the bytes it takes on disk (file, WAL, index and output segments), while open and after its
// close, against the bytes it still holds, for a record made by this version and for one made
// before incremental auto-vacuum (the worst of the four decides). 14b: opening a record of about
// 160 MiB of captured output whose sandscope was killed while it had it open (no clean mark,
// frames not checkpointed, output past its last commit).
func figRecordDisk(e *env) ([]row, error) {
	a := row{fig: "14a", name: "record size after pruning (160 MiB captured, 96 MiB budget)", budget: "≤ 1.25× what it holds", result: notMeas}
	b := row{fig: "14b", name: "record open after a killed run, 160 MiB of captured output", budget: "< 1000 ms", result: notMeas}
	res, err := e.goBench("./record", "^BenchmarkPrunedSize$", "1x")
	if err != nil {
		a.result, a.note = fail, err.Error()
	} else {
		a = prunedRow(a, res)
	}
	res, err = e.goBench("./record", "^BenchmarkOpenUnclean$", "3x")
	if err != nil {
		b.result, b.note = fail, err.Error()
	} else if ms, err := need(res, "BenchmarkOpenUnclean", "open-ms"); err != nil {
		b.result, b.note = fail, err.Error()
	} else {
		size, _ := need(res, "BenchmarkOpenUnclean", "MiB-record")
		b.value = fmt.Sprintf("%.1f ms (mean of 3)", ms)
		b.baseline = fmt.Sprintf("a record of %.0f MiB", size)
		b.result = verdict(ms < 1000)
	}
	return []row{a, b}, nil
}

// prunedRow fills 14a from BenchmarkPrunedSize's results.
func prunedRow(r row, res map[string]metrics) row {
	worst, live, before, which := 0.0, 0.0, 0.0, ""
	for _, c := range []string{"incremental", "legacy-file"} {
		name := "BenchmarkPrunedSize/" + c
		l, err := need(res, name, "MiB-live")
		if err != nil {
			r.result, r.note = fail, err.Error()
			return r
		}
		bf, _ := need(res, name, "MiB-before")
		for _, when := range []string{"open", "closed"} {
			x, err := need(res, name, "disk/live-"+when)
			if err != nil {
				r.result, r.note = fail, err.Error()
				return r
			}
			if x > worst {
				worst, live, before, which = x, l, bf, c+", "+when
			}
		}
	}
	r.value = fmt.Sprintf("%.0f MiB on disk (%s)", worst*live, which)
	r.baseline = fmt.Sprintf("%.0f MiB held, %.0f MiB before pruning", live, before)
	r.ratio = f2(worst) + "×"
	r.result = verdict(worst <= 1.25)
	return r
}

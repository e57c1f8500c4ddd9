package components

// Column describes one table column for Layout.
type Column struct {
	Title    string
	Min      int // narrowest useful width (the title is cut below it)
	Want     int // width it gets when there is room (0: Min)
	Priority int // lower keeps its place longer; columns of the highest priority go first
	Flex     bool
}

// Layout gives each column a width for a table width cells wide (one space between columns).
// Every column first gets its Min, in priority order; columns that do not fit get 0 (hidden),
// dropped from the highest priority down. Room left grows columns toward Want, by priority (in
// column order within one priority); then flexible columns share what remains. A table keeps a
// wide column from starving a more useful one by giving it a modest Want. The widths sum, with separators, to at most width.
func Layout(cols []Column, width int) []int {
	out := make([]int, len(cols))
	order := make([]int, len(cols))
	for i := range order {
		order[i] = i
	}
	// stable order by priority
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && cols[order[j]].Priority < cols[order[j-1]].Priority; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	used := 0
	shown := 0
	for _, i := range order {
		need := cols[i].Min
		if shown > 0 {
			need++
		}
		if used+need > width {
			continue
		}
		out[i] = cols[i].Min
		used += need
		shown++
	}
	room := width - used
	// grow toward Want, by priority (columns of one priority in their order)
	for _, i := range order {
		if out[i] == 0 || room <= 0 {
			continue
		}
		want := max(cols[i].Want, cols[i].Min)
		grow := min(want-out[i], room)
		if grow > 0 {
			out[i] += grow
			room -= grow
		}
	}
	var flex []int
	for _, i := range order {
		if out[i] > 0 && cols[i].Flex {
			flex = append(flex, i)
		}
	}
	for k, i := range flex {
		share := room / (len(flex) - k)
		out[i] += share
		room -= share
	}
	return out
}

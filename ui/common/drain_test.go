package common

import (
	"testing"
	"unsafe"
)

// DrainInto takes what the channel holds into the array it is given, up to the limit, and reports
// a close after the values before it.
func TestDrainIntoReusesTheBatch(t *testing.T) {
	ch := make(chan int, 8)
	for i := 1; i <= 5; i++ {
		ch <- i
	}
	first, closed := Drain(ch, 3)
	if len(first) != 3 || first[2] != 3 || closed {
		t.Fatalf("first batch %v closed %v", first, closed)
	}
	spare := make([]int, 0, 8)
	second, closed := DrainInto(ch, spare, 3)
	if len(second) != 2 || second[0] != 4 || second[1] != 5 || closed {
		t.Fatalf("second batch %v closed %v", second, closed)
	}
	if unsafe.SliceData(second) != unsafe.SliceData(spare) {
		t.Fatal("the batch did not go into the array given")
	}
	ch <- 6
	close(ch)
	third, closed := DrainInto(ch, second[:0], 3)
	if len(third) != 1 || third[0] != 6 || !closed {
		t.Fatalf("third batch %v closed %v", third, closed)
	}
	if last, closed := DrainInto(ch, third[:0], 3); len(last) != 0 || !closed {
		t.Fatalf("after the close: %v closed %v", last, closed)
	}
}

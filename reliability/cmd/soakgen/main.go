package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"sandscope/reliability/internal/seeded"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: soakgen SEED CHUNKS SIZE PAUSE_MS MIXED")
		os.Exit(2)
	}
	seed, err1 := strconv.ParseUint(os.Args[1], 10, 64)
	n, err2 := strconv.Atoi(os.Args[2])
	size, err3 := strconv.Atoi(os.Args[3])
	pause, err4 := strconv.Atoi(os.Args[4])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || n < 0 || size <= 0 || pause < 0 {
		fmt.Fprintln(os.Stderr, "soakgen: bad arguments")
		os.Exit(2)
	}
	mixed := os.Args[5] == "1"
	for i, c := range seeded.Chunks(seed, n, size) {
		var w io.Writer = os.Stdout
		if mixed && i%2 == 1 {
			w = os.Stderr
		}
		if _, err := w.Write(c); err != nil {
			os.Exit(1)
		}
		time.Sleep(time.Duration(pause) * time.Millisecond)
	}
}

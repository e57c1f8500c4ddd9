package man

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"sandscope/internal/cli/cmdutil"
)

// man writes one page per command of the tree it is part of, into the directory it is given.
func TestManWritesTheTreesPages(t *testing.T) {
	root := &cobra.Command{Use: "sandscope"}
	root.AddCommand(&cobra.Command{Use: "ls", Short: "List", Run: func(*cobra.Command, []string) {}})
	var got *ManOptions
	root.AddCommand(NewCmdMan(&cmdutil.Factory{}, func(o *ManOptions) error { got = o; return nil }))
	root.SetArgs([]string{"man", "pages"})
	if err := root.Execute(); err != nil || got == nil || got.Dir != "pages" || got.Root != root {
		t.Fatalf("err %v, options %+v", err, got)
	}
	got.Dir = filepath.Join(t.TempDir(), "man1")
	if err := got.Run(); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"sandscope.1", "sandscope-ls.1"} {
		if fi, err := os.Stat(filepath.Join(got.Dir, page)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", page, err)
		}
	}
}

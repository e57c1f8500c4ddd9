package cmdutil

import (
	"testing"

	"sandscope/config"
	"sandscope/record"
)

// The configuration states the record's defaults for `sandscope config`; the record applies its
// own when given none. They must be the same budget.
func TestRecordBudgetDefaultsAreTheRecords(t *testing.T) {
	eff, err := (&config.Config{}).Resolve(config.Flags{}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if got := RecordBudget(eff); got != record.DefaultBudget {
		t.Fatalf("the configuration's defaults %+v, the record's %+v", got, record.DefaultBudget)
	}
}

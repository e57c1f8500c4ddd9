package client

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"sync"
)

// PoolStats is the bridge's container pool (GET /v1/pool/stats): warm containers ready for use,
// containers assigned to sandbox IDs, the total the pool tracks, and the instance limit when the
// pool knows it (MaxInstances nil: not learned yet).
type PoolStats struct {
	Warm         int        `json:"warm"`
	Assigned     int        `json:"assigned"`
	Total        int        `json:"total"`
	MaxInstances *int       `json:"maxInstances"`
	Config       PoolConfig `json:"config"`
}

// PoolConfig is the pool's configuration as the bridge reports it (fields a bridge leaves out are
// zero).
type PoolConfig struct {
	WarmTarget      int `json:"warmTarget"`
	RefreshInterval int `json:"refreshInterval"` // milliseconds
	MaxInstances    int `json:"maxInstances,omitempty"`
	ScaleBatchSize  int `json:"scaleBatchSize,omitempty"`
}

// poolStatsMax bounds the pool statistics answer.
const poolStatsMax = 64 << 10

// PoolStats reads the container pool's statistics. It never starts a container (the route is not
// a sandbox route). A bridge without pool routes (sandscope's local bridge answers 501
// not_supported; an older Worker a text 404) gives an error matching ErrUnsupported. Bounded by the
// client's request timeout.
func (c *Client) PoolStats(ctx context.Context) (PoolStats, error) {
	var out PoolStats
	err := c.exchange(ctx, c.previewRequest, poolStatsMax, "pool stats", http.MethodGet, "/v1/pool/stats", nil, &out)
	return out, err
}

// capacityCounts finds "(N/M)" in the bridge's capacity message ("instance limit reached (N/M)").
// Compiled at first use, not at every command's start.
var capacityCounts = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`instance limit reached \((\d{1,9})/(\d{1,9})\)`)
})

// CapacityLimit reads the numbers a 503 capacity_exceeded names: the instances in use and the
// limit. ok is false when err is no capacity error or its message carries no numbers.
func CapacityLimit(err error) (used, limit int, ok bool) {
	var ae *APIError
	if !errors.As(err, &ae) || !ae.Is(ErrCapacity) {
		return 0, 0, false
	}
	m := capacityCounts().FindStringSubmatch(ae.Message)
	if m == nil {
		return 0, 0, false
	}
	used, _ = strconv.Atoi(m[1])
	limit, _ = strconv.Atoi(m[2])
	return used, limit, true
}

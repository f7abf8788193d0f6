package maintenance

import (
	"fmt"

	"github.com/hopperq/hopper/job"
)

// describe is used in log lines.
func describe(sc *job.Schedule) string {
	if sc.FixedDelay {
		return fmt.Sprintf("%s (fixed delay)", sc.Spec)
	}
	return sc.Spec
}

package kinds

import "github.com/hopperq/hopper/internal/jsondur"

// Duration is a time.Duration that encodes in JSON as a Go duration string
// such as "30s" or "1m30s". When decoding it also accepts a JSON number,
// read as seconds (so 1.5 is 1.5s) — the one meaning of a bare number in
// every document Hopper reads. D returns it as a time.Duration.
type Duration = jsondur.Duration

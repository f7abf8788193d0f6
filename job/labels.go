package job

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of a job's metadata and tags, the same on every store. Enqueue,
// schedules and their API and command forms refuse more with a
// *FieldError on "meta" or "tags".
const (
	// MaxMetaSize bounds a job's metadata: the bytes of its keys and
	// values together. Metadata carries context (a trace's parent, a
	// tenant, a request ID), not payloads: those are args.
	MaxMetaSize = 4 << 10
	// MaxMetaKeySize bounds one metadata key.
	MaxMetaKeySize = 128
	// MaxTags bounds the tags of a job, and MaxTagSize one tag's bytes.
	MaxTags    = 16
	MaxTagSize = 64
)

// CheckMeta returns a *FieldError on field unless m fits MaxMetaSize and
// its keys are non-empty, at most MaxMetaKeySize bytes, valid UTF-8
// without control characters, and its values valid UTF-8 without a NUL
// (PostgreSQL cannot store one).
func CheckMeta(field string, m map[string]string) error {
	size := 0
	for k, v := range m {
		size += len(k) + len(v)
		switch {
		case k == "":
			return Invalid(field, "a key is empty")
		case len(k) > MaxMetaKeySize:
			return Invalid(field, "key %.32q… is longer than %d bytes", k, MaxMetaKeySize)
		case !utf8.ValidString(k) || strings.IndexFunc(k, isControl) >= 0:
			return Invalid(field, "key %q is not valid UTF-8 without control characters", k)
		case !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0:
			return Invalid(field, "the value of %q is not valid UTF-8 without NUL bytes", k)
		}
	}
	if size > MaxMetaSize {
		return Invalid(field, "%d bytes of keys and values, more than the limit of %d", size, MaxMetaSize)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// CheckTag returns a *FieldError on field unless t is a tag: 1 to
// MaxTagSize bytes of ASCII letters, digits and "_", "-", ".", ":", "/"
// (no spaces and no commas, so a tag reads the same in a URL, a flag and a
// comma-separated list).
func CheckTag(field, t string) error {
	if t == "" {
		return Invalid(field, "a tag is empty")
	}
	if len(t) > MaxTagSize {
		return Invalid(field, "tag %.32q… is longer than %d bytes", t, MaxTagSize)
	}
	for i := 0; i < len(t); i++ {
		if !tagByte(t[i]) {
			return Invalid(field, "tag %q holds %q at byte %d: a tag is ASCII letters, digits and _ - . : /", t, t[i], i)
		}
	}
	return nil
}

func tagByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == ':' || c == '/'
}

// CheckTags returns a *FieldError on field unless tags holds at most
// MaxTags tags, each valid (CheckTag), none twice.
func CheckTags(field string, tags []string) error {
	if len(tags) > MaxTags {
		return Invalid(field, "%d tags, more than the limit of %d", len(tags), MaxTags)
	}
	for i, t := range tags {
		if err := CheckTag(field, t); err != nil {
			return err
		}
		if slices.Contains(tags[:i], t) {
			return Invalid(field, "tag %q is given twice", t)
		}
	}
	return nil
}

// HasTag reports whether j carries tag.
func (j *Job) HasTag(tag string) bool { return slices.Contains(j.Tags, tag) }

func cloneMeta(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

package core

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode"
	"unicode/utf8"

	"github.com/trovehq/trove"
)

// validateName checks a store name: 1..MaxNameChars characters of valid
// UTF-8 with no control characters.
func (s *Service) validateName(name string) error {
	if !utf8.ValidString(name) {
		return trove.Errorf(trove.EINVALID, "name must be valid UTF-8")
	}
	n := utf8.RuneCountInString(name)
	if n < 1 || n > s.limits.MaxNameChars {
		return trove.Errorf(trove.EINVALID, "name must be 1 to %d characters, got %d", s.limits.MaxNameChars, n)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return trove.Errorf(trove.EINVALID, "name must not contain control characters (found U+%04X)", r)
		}
	}
	return nil
}

// validateDescription checks a store description: valid UTF-8 of at most
// MaxDescriptionChars characters.
func (s *Service) validateDescription(d string) error {
	if !utf8.ValidString(d) {
		return trove.Errorf(trove.EINVALID, "description must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(d); n > s.limits.MaxDescriptionChars {
		return trove.Errorf(trove.EINVALID, "description must be at most %d characters, got %d", s.limits.MaxDescriptionChars, n)
	}
	return nil
}

// validateMetadata checks complete (already merged) metadata. Violations are
// EINVALID with DetailCode "invalid_metadata".
func (s *Service) validateMetadata(m map[string]string) error {
	bad := func(format string, args ...any) error {
		e := trove.Errorf(trove.EINVALID, format, args...)
		e.DetailCode = "invalid_metadata"
		return e
	}
	if len(m) > s.limits.MaxMetadataPairs {
		return bad("metadata must have at most %d pairs, got %d", s.limits.MaxMetadataPairs, len(m))
	}
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return bad("metadata keys and values must be valid UTF-8")
		}
		if n := utf8.RuneCountInString(k); n < 1 || n > s.limits.MaxMetadataKeyChars {
			return bad("metadata keys must be 1 to %d characters, got %d", s.limits.MaxMetadataKeyChars, n)
		}
		if n := utf8.RuneCountInString(v); n > s.limits.MaxMetadataValChars {
			return bad("metadata value of key %q must be at most %d characters, got %d", k, s.limits.MaxMetadataValChars, n)
		}
	}
	return nil
}

// validateContent checks memory content: valid UTF-8 of at most
// MaxContentBytes bytes.
func (s *Service) validateContent(c string) error {
	if len(c) > s.limits.MaxContentBytes {
		return trove.Errorf(trove.EINVALID, "content is %d bytes; the limit is %d bytes", len(c), s.limits.MaxContentBytes)
	}
	return trove.CheckContentUTF8(c)
}

func (s *Service) validatePath(p string) error {
	return trove.ValidatePath(p, s.limits.MaxPathBytes, s.limits.MaxPathSegments)
}

// validateSHA checks a content_sha256 precondition: 64 lowercase hex digits.
func validateSHA(field, h string) error {
	if len(h) != 64 {
		return trove.Errorf(trove.EINVALID, "%s must be 64 lowercase hex characters", field)
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return trove.Errorf(trove.EINVALID, "%s must be 64 lowercase hex characters", field)
		}
	}
	return nil
}

// sha256Hex is the lowercase hex SHA-256 of the exact bytes of c.
func sha256Hex(c string) string {
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:])
}

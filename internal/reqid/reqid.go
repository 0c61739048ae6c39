// Package reqid says what a plain request id is: the X-Request-Id the
// client sends (--request-id-prefix and an index) and the one the
// built-in server takes from a request.
package reqid

// Plain reports whether s has only letters, digits and "-_.:": one word
// in a header and in a server's logs, nothing to escape in JSON.
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

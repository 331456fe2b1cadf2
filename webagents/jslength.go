package webagents

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// jsJSONLength is the length, in UTF-16 code units, of
// JSON.stringify(JSON.parse(text)) in JavaScript, for the value v that
// decodeTree made of text: what the originating client measures a schema
// by. It differs from the length of text, and of Go's serialization, where
// JavaScript rewrites numbers (1e20 is "100000000000000000000", 1.50 is
// "1.5", 1e400 is null) and escapes (it writes U+2028 and "/" as they are,
// and \b, \f as two characters).
func jsJSONLength(v any) int {
	switch v := v.(type) {
	case nil:
		return len("null")
	case bool:
		if v {
			return len("true")
		}
		return len("false")
	case json.Number:
		return jsNumberLength(string(v))
	case string:
		return jsStringLength(v)
	case []any:
		n := 2 + max(len(v)-1, 0) // brackets and commas
		for _, e := range v {
			n += jsJSONLength(e)
		}
		return n
	case map[string]any:
		n := 2 + max(len(v)-1, 0) // braces and commas
		for k, e := range v {
			n += jsStringLength(k) + 1 + jsJSONLength(e)
		}
		return n
	}
	return 0
}

// jsStringLength is the length of JSON.stringify(s) in UTF-16 code units.
// s is valid UTF-8 without lone surrogates (strict JSON refuses both).
func jsStringLength(s string) int {
	n := 2
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
			n += 2
		case r < 0x20:
			n += len(`\u0000`)
		case r > 0xFFFF:
			n += 2
		default:
			n++
		}
	}
	return n
}

// jsNumberLength is the length of JSON.stringify(Number(text)): the
// shortest digits that round-trip, written as ECMAScript's
// Number::toString writes them, or "null" for a number beyond float64.
func jsNumberLength(text string) int {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) {
		return len(text) // not a number JSON allows; never reached after the strict scan
	}
	if math.IsInf(f, 0) {
		return len("null")
	}
	if f == 0 {
		return 1 // "0", also for -0
	}
	sign := 0
	if f < 0 {
		sign, f = 1, -f
	}
	// "d.ddde±x": k significant digits, decimal exponent n-1.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mantissa, exp, _ := strings.Cut(e, "e")
	k := len(strings.Replace(mantissa, ".", "", 1))
	x, _ := strconv.Atoi(exp)
	n := x + 1
	switch {
	case k <= n && n <= 21:
		return sign + n // the digits, then n-k zeros
	case 0 < n && n <= 21:
		return sign + k + 1 // a decimal point inside the digits
	case -6 < n && n <= 0:
		return sign + 2 + -n + k // "0." and -n zeros before the digits
	}
	exponent := len(strconv.Itoa(abs(n - 1)))
	if k == 1 {
		return sign + 1 + 2 + exponent // "de+x"
	}
	return sign + k + 1 + 2 + exponent // "d.ddde+x"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

package soapenc

import (
	"strconv"
	"strings"
)

// validSimple checks the lexical form of a numeric or boolean value (already
// trimmed, non-empty), including the range of the sized integer types.
func validSimple(typ, s string) bool {
	switch typ {
	case "boolean":
		return isTrue(s) || isFalse(s)
	case "long":
		return validInt(s, 64)
	case "int":
		return validInt(s, 32)
	case "short":
		return validInt(s, 16)
	case "byte":
		return validInt(s, 8)
	case "unsignedLong":
		return validUint(s, 64)
	case "unsignedInt":
		return validUint(s, 32)
	case "unsignedShort":
		return validUint(s, 16)
	case "unsignedByte":
		return validUint(s, 8)
	case "integer":
		return isInteger(s)
	case "nonNegativeInteger":
		return isInteger(s) && (s[0] != '-' || allZero(s[1:]))
	case "positiveInteger":
		return isInteger(s) && s[0] != '-' && !allZero(strings.TrimPrefix(s, "+"))
	case "nonPositiveInteger":
		return isInteger(s) && (s[0] == '-' || allZero(strings.TrimPrefix(s, "+")))
	case "negativeInteger":
		return isInteger(s) && s[0] == '-' && !allZero(s[1:])
	case "decimal":
		return isDecimal(s, false)
	case "double", "float":
		switch s {
		case "INF", "+INF", "-INF", "NaN":
			return true
		}
		return isDecimal(s, true)
	}
	return true
}

func validInt(s string, bits int) bool {
	if !isInteger(s) {
		return false
	}
	_, err := strconv.ParseInt(s, 10, bits)
	return err == nil
}

func validUint(s string, bits int) bool {
	if !isInteger(s) {
		return false
	}
	if s[0] == '-' {
		return allZero(s[1:])
	}
	_, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, bits)
	return err == nil
}

// isInteger: [+-]?[0-9]+
func isInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && allDigits(s)
}

// isDecimal: [+-]?(d+(.d*)?|.d+), with exp also ([eE][+-]?d+)?
func isDecimal(s string, exp bool) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if exp {
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			if !isInteger(s[i+1:]) {
				return false
			}
			s = s[:i]
		}
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" {
		return false
	}
	return allDigits(intPart) && allDigits(frac)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}

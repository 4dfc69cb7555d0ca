package report

// The examples: each Row's REST call written in the shop's language, with
// the helpers docs/migration.md defines once per language (rest, restForm:
// an HTTP call with the OAuth2 token, JSON or form in, decoded JSON out).
// Bodies are kept as ordered values and rendered per language here, so
// every example of every row is generated from the one mapping table.

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/legacybridge/soapbridge/operations/usage"
)

// kv is one member of an example body; k == elided marks "the rest of the
// payment" (a comment line).
type kv struct {
	k string
	v any
}

type obj []kv

type arr []any

// shopVar is a variable of the shop's code, named in camelCase.
type shopVar string

const elided = "\x00elided"

// o builds an obj from key, value pairs.
func o(pairs ...any) obj {
	out := make(obj, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, kv{pairs[i].(string), pairs[i+1]})
	}
	return out
}

// Languages of the examples: the shops' (usage.Lang*) and plain HTTP for a
// shop whose client does not tell its language.
const LangHTTP = "HTTP"

// AllLanguages lists every example language.
var AllLanguages = []string{usage.LangPHP, usage.LangJava, usage.LangCSharp, usage.LangPython, usage.LangPerl, usage.LangJavaScript, LangHTTP}

// Example is a row's REST call in one language.
type Example struct {
	Language string `json:"language"`
	Code     string `json:"code"`
}

// example writes r's call in lang; ok is false when r has no call.
func example(lang string, r Row) (Example, bool) {
	c := r.Call
	if c == nil {
		return Example{}, false
	}
	l, ok := langs[lang]
	if !ok {
		return Example{}, false
	}
	var b strings.Builder
	if lang == LangHTTP {
		writeHTTP(&b, c)
	} else {
		fn, body := "rest", c.JSON
		if c.Form != nil {
			fn, body = "restForm", c.Form
		}
		arg := ""
		if body != nil {
			arg = render(l, body, true)
		}
		b.WriteString(l.assign(c.Result, l.call(fn, c.Method, l.path(c.Path), arg)))
	}
	if c.Then != "" {
		b.WriteString("\n" + l.comment + " " + c.Then)
	}
	return Example{Language: lang, Code: b.String()}, true
}

// lang is how one language writes the examples.
type lang struct {
	comment string
	name    func(v shopVar) string      // a shop variable
	str     func(s string) string       // a string literal
	boolean func(b bool) string         // a boolean literal
	num     func(n int64) string        // an integer literal
	list    func(items []string) string // a list literal of rendered items
	object  func(members []member, top bool) string
	path    func(p string) string
	call    func(fn, method, path, body string) string // body: rendered, "" for none
	assign  func(result, expr string) string
}

// member is one rendered member of an object (elided: a comment line).
type member struct {
	key, value string
	elided     bool
}

var langs = map[string]lang{
	usage.LangPHP: {
		comment: "//",
		name:    func(v shopVar) string { return "$" + string(v) },
		str:     singleQuoted,
		boolean: strconv.FormatBool,
		num:     func(n int64) string { return strconv.FormatInt(n, 10) },
		list:    func(items []string) string { return "[" + strings.Join(items, ", ") + "]" },
		object: func(ms []member, top bool) string {
			return block(ms, top, "[", "]", "//", func(m member) string { return singleQuoted(m.key) + " => " + m.value })
		},
		path: func(p string) string {
			return interpolate(p, singleQuoted, func(v string) string { return "$" + v }, " . ")
		},
		call: func(fn, method, path, body string) string {
			return fn + "(" + singleQuoted(method) + ", " + path + optArg(body) + ")"
		},
		assign: func(r, e string) string { return "$" + r + " = " + e + ";" },
	},
	usage.LangJava: {
		comment: "//",
		name:    func(v shopVar) string { return string(v) },
		str:     doubleQuoted,
		boolean: strconv.FormatBool,
		num:     javaNum,
		list:    func(items []string) string { return "List.of(" + strings.Join(items, ", ") + ")" },
		object: func(ms []member, top bool) string {
			if !top {
				var parts []string
				for _, m := range ms {
					parts = append(parts, doubleQuoted(m.key)+", "+m.value)
				}
				return "Map.of(" + strings.Join(parts, ", ") + ")"
			}
			return block(ms, true, "Map.ofEntries(", ")", "//", func(m member) string {
				return "entry(" + doubleQuoted(m.key) + ", " + m.value + ")"
			})
		},
		path: func(p string) string { return interpolate(p, doubleQuoted, func(v string) string { return v }, " + ") },
		call: func(fn, method, path, body string) string {
			return fn + "(" + doubleQuoted(method) + ", " + path + optArg(body) + ")"
		},
		assign: func(r, e string) string { return "var " + r + " = " + e + ";" },
	},
	usage.LangCSharp: {
		comment: "//",
		name:    func(v shopVar) string { return string(v) },
		str:     doubleQuoted,
		boolean: strconv.FormatBool,
		num:     func(n int64) string { return strconv.FormatInt(n, 10) },
		list:    func(items []string) string { return "new[] { " + strings.Join(items, ", ") + " }" },
		object: func(ms []member, top bool) string {
			return block(ms, top, "new {", "}", "//", func(m member) string { return m.key + " = " + m.value })
		},
		path: func(p string) string {
			if !strings.Contains(p, "{") {
				return doubleQuoted(p)
			}
			return `$"` + strings.NewReplacer("{id}", "{paymentId}").Replace(p) + `"`
		},
		call: func(fn, method, path, body string) string {
			return "await " + upperFirst(fn) + "(" + doubleQuoted(method) + ", " + path + optArg(body) + ")"
		},
		assign: func(r, e string) string { return "var " + r + " = " + e + ";" },
	},
	usage.LangPython: {
		comment: "#",
		name:    func(v shopVar) string { return snake(string(v)) },
		str:     doubleQuoted,
		boolean: func(b bool) string { return map[bool]string{true: "True", false: "False"}[b] },
		num:     func(n int64) string { return strconv.FormatInt(n, 10) },
		list:    func(items []string) string { return "[" + strings.Join(items, ", ") + "]" },
		object: func(ms []member, top bool) string {
			return blockPad(ms, top, "{", "}", "#", false, func(m member) string { return doubleQuoted(m.key) + ": " + m.value })
		},
		path: func(p string) string {
			if !strings.Contains(p, "{") {
				return doubleQuoted(p)
			}
			return `f"` + strings.NewReplacer("{id}", "{payment_id}").Replace(p) + `"`
		},
		call: func(fn, method, path, body string) string {
			return snake(fn) + "(" + doubleQuoted(method) + ", " + path + optArg(body) + ")"
		},
		assign: func(r, e string) string { return r + " = " + e },
	},
	usage.LangPerl: {
		comment: "#",
		name:    func(v shopVar) string { return "$" + snake(string(v)) },
		str:     singleQuoted,
		boolean: func(b bool) string { return map[bool]string{true: "JSON::PP::true", false: "JSON::PP::false"}[b] },
		num:     func(n int64) string { return strconv.FormatInt(n, 10) },
		list:    func(items []string) string { return "[" + strings.Join(items, ", ") + "]" },
		object: func(ms []member, top bool) string {
			return block(ms, top, "{", "}", "#", func(m member) string { return m.key + " => " + m.value })
		},
		path: func(p string) string {
			if !strings.Contains(p, "{") {
				return singleQuoted(p)
			}
			return `"` + strings.NewReplacer("{id}", "$payment_id", "{goid}", "$goid", "{currency}", "$currency").Replace(p) + `"`
		},
		call: func(fn, method, path, body string) string {
			return snake(fn) + "(" + method + " => " + path + optArg(body) + ")"
		},
		assign: func(r, e string) string { return "my $" + r + " = " + e + ";" },
	},
	usage.LangJavaScript: {
		comment: "//",
		name:    func(v shopVar) string { return string(v) },
		str:     doubleQuoted,
		boolean: strconv.FormatBool,
		num:     func(n int64) string { return strconv.FormatInt(n, 10) },
		list:    func(items []string) string { return "[" + strings.Join(items, ", ") + "]" },
		object: func(ms []member, top bool) string {
			return block(ms, top, "{", "}", "//", func(m member) string { return m.key + ": " + m.value })
		},
		path: func(p string) string {
			if !strings.Contains(p, "{") {
				return doubleQuoted(p)
			}
			return "`" + strings.NewReplacer("{id}", "${paymentId}", "{goid}", "${goid}", "{currency}", "${currency}").Replace(p) + "`"
		},
		call: func(fn, method, path, body string) string {
			return "await " + fn + "(" + doubleQuoted(method) + ", " + path + optArg(body) + ")"
		},
		assign: func(r, e string) string { return "const " + r + " = " + e + ";" },
	},
	LangHTTP: {comment: "#"},
}

// optArg is a rendered body as the call's last argument, or nothing.
func optArg(body string) string {
	if body == "" {
		return ""
	}
	return ", " + body
}

// render writes a value in l.
func render(l lang, v any, top bool) string {
	switch x := v.(type) {
	case obj:
		ms := make([]member, 0, len(x))
		for _, m := range x {
			if m.k == elided {
				ms = append(ms, member{elided: true})
				continue
			}
			ms = append(ms, member{key: m.k, value: render(l, m.v, false)})
		}
		return l.object(ms, top)
	case arr:
		items := make([]string, len(x))
		for i, it := range x {
			items[i] = render(l, it, false)
		}
		return l.list(items)
	case shopVar:
		return l.name(x)
	case string:
		return l.str(x)
	case bool:
		return l.boolean(x)
	case int:
		return l.num(int64(x))
	case int64:
		return l.num(x)
	}
	panic(fmt.Sprintf("report: example value of type %T", v))
}

// block writes an object: the top-level one member per line (the elided
// rest as a comment line), nested ones on one line.
func block(ms []member, top bool, open, close, comment string, item func(member) string) string {
	return blockPad(ms, top, open, close, comment, true, item)
}

// blockPad is block; pad puts spaces inside the braces of a nested object.
func blockPad(ms []member, top bool, open, close, comment string, pad bool, item func(member) string) string {
	var parts []string
	hasElided := false
	for _, m := range ms {
		if m.elided {
			hasElided = true
			continue
		}
		parts = append(parts, item(m))
	}
	if !top {
		inner := strings.Join(parts, ", ")
		if pad && strings.HasSuffix(open, "{") {
			return open + " " + inner + " " + close
		}
		return open + inner + close
	}
	s := open + "\n    " + strings.Join(parts, ",\n    ")
	if hasElided {
		// No comma before it: Java allows none before the closing parenthesis.
		s += "\n    " + comment + " … the rest of the request as above"
	}
	return s + "\n" + close
}

// interpolate writes a path with {var} parts as a concatenation.
func interpolate(p string, lit func(string) string, name func(string) string, join string) string {
	var parts []string
	for p != "" {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			parts = append(parts, lit(p))
			break
		}
		if i > 0 {
			parts = append(parts, lit(p[:i]))
		}
		j := strings.IndexByte(p, '}')
		v := p[i+1 : j]
		if v == "id" {
			v = "paymentId"
		}
		parts = append(parts, name(v))
		p = p[j+1:]
	}
	return strings.Join(parts, join)
}

func writeHTTP(b *strings.Builder, c *Call) {
	path := strings.NewReplacer("{id}", "<payment id>", "{goid}", "<goid>", "{currency}", "<currency>").Replace(c.Path)
	b.WriteString(c.Method + " {gateway}/api" + path + "\nAuthorization: Bearer <access token>")
	switch {
	case c.JSON != nil:
		b.WriteString("\nContent-Type: application/json\n\n" + httpJSON(c.JSON, ""))
	case c.Form != nil:
		var fields []string
		for _, m := range c.Form {
			fields = append(fields, m.k+"="+httpScalar(m.v))
		}
		b.WriteString("\nContent-Type: application/x-www-form-urlencoded\n\n" + strings.Join(fields, "&"))
	}
}

func httpJSON(v any, indent string) string {
	switch x := v.(type) {
	case obj:
		var parts []string
		for _, m := range x {
			if m.k == elided {
				parts = append(parts, "…")
				continue
			}
			parts = append(parts, doubleQuoted(m.k)+": "+httpJSON(m.v, indent+"  "))
		}
		if indent == "" {
			return "{\n  " + strings.Join(parts, ",\n  ") + "\n}"
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case arr:
		items := make([]string, len(x))
		for i, it := range x {
			items[i] = httpJSON(it, indent+"  ")
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	return httpScalar(v)
}

func httpScalar(v any) string {
	switch x := v.(type) {
	case shopVar:
		return "<" + snake(string(x)) + ">"
	case string:
		return doubleQuoted(x)
	}
	return fmt.Sprint(v)
}

func singleQuoted(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func doubleQuoted(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func javaNum(n int64) string {
	if n > 1<<31-1 || n < -1<<31 {
		return strconv.FormatInt(n, 10) + "L"
	}
	return strconv.FormatInt(n, 10)
}

// snake turns camelCase into snake_case (Python, Perl).
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

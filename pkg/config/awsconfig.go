package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// AWSConfig is an AWS shared config or credentials file, read as the AWS CLI
// (botocore) reads it: Python's configparser (sections, "=" or ":" between
// key and value, whole-line "#" and ";" comments, indented continuation
// lines, lower-cased keys, a DEFAULT section inherited by every section),
// then one level of nesting for values that start on the next line, such
// as the `s3 =` block that `aws configure set default.s3.KEY` writes.
type AWSConfig struct {
	// Path is the file read, for messages.
	Path     string
	profiles map[string]map[string]string
	nested   map[string]map[string]map[string]string
	// services are the [services NAME] sections: per service ("s3"),
	// its settings (endpoint_url).
	services map[string]map[string]map[string]string
}

// ReadAWSConfig reads the AWS config file at path. Profiles are "[default]"
// and "[profile NAME]" sections, or, when credentials is true (the
// credentials file), any section. A missing file is an empty config.
func ReadAWSConfig(path string, credentials bool) (*AWSConfig, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &AWSConfig{Path: path}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read aws config: %w", err)
	}
	defer f.Close()
	return ParseAWSConfig(f, path, credentials)
}

// ParseAWSConfig reads an AWS config file from r; name is used in errors.
func ParseAWSConfig(r io.Reader, name string, credentials bool) (*AWSConfig, error) {
	sections, err := parseINI(r)
	if err != nil {
		return nil, fmt.Errorf("parse aws config %s: %w", name, err)
	}
	c := &AWSConfig{Path: name, profiles: map[string]map[string]string{}, nested: map[string]map[string]map[string]string{},
		services: map[string]map[string]map[string]string{}}
	for _, sec := range sections {
		if sec.name == "DEFAULT" {
			continue
		}
		if svc, ok := servicesName(sec.name); ok && !credentials {
			blocks := map[string]map[string]string{}
			for k, v := range sec.values {
				if sub, err := parseNested(v); err == nil && strings.HasPrefix(v, "\n") {
					blocks[k] = sub
				}
			}
			c.services[svc] = blocks
			continue
		}
		profile, ok := sec.name, true
		if !credentials {
			profile, ok = profileName(sec.name)
		}
		if !ok {
			continue
		}
		flat := map[string]string{}
		nested := map[string]map[string]string{}
		for k, v := range sec.values {
			if !strings.HasPrefix(v, "\n") {
				flat[k] = v
				continue
			}
			sub, err := parseNested(v)
			if err != nil {
				return nil, fmt.Errorf("parse aws config %s [%s] %s: %w", name, sec.name, k, err)
			}
			nested[k] = sub
		}
		c.profiles[profile] = flat
		c.nested[profile] = nested
	}
	return c, nil
}

// HasProfile reports whether the file defines the profile.
func (c *AWSConfig) HasProfile(profile string) bool {
	_, ok := c.profiles[profile]
	return ok
}

// Get returns a top-level key of a profile.
func (c *AWSConfig) Get(profile, key string) (string, bool) {
	v, ok := c.profiles[profile][key]
	return v, ok
}

// Section returns the nested block key (such as "s3") of a profile, nil if
// the profile has none.
func (c *AWSConfig) Section(profile, key string) map[string]string {
	return c.nested[profile][key]
}

// Service returns the block for service (such as "s3") of the [services
// NAME] section, nil if there is none.
func (c *AWSConfig) Service(name, service string) map[string]string {
	return c.services[name][service]
}

// servicesName maps "services NAME" to NAME.
func servicesName(section string) (string, bool) {
	parts, err := shellSplit(section)
	if err != nil || len(parts) != 2 || parts[0] != "services" {
		return "", false
	}
	return parts[1], true
}

// profileName maps a config-file section name to its profile as botocore
// does: "default", or "profile NAME" split like a shell word list.
func profileName(section string) (string, bool) {
	if section == "default" {
		return section, true
	}
	if !strings.HasPrefix(section, "profile") {
		return "", false
	}
	parts, err := shellSplit(section)
	if err != nil || len(parts) != 2 {
		return "", false
	}
	return parts[1], true
}

// shellSplit splits s into words honouring single and double quotes.
func shellSplit(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unclosed quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// parseNested reads the lines of a nested block, "key = value" each.
func parseNested(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, line := range strings.Split(v, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, errors.New("a nested line has no '='")
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return out, nil
}

type iniSection struct {
	name   string
	values map[string]string
}

// parseINI follows Python's configparser.RawConfigParser with its defaults
// (strict, no value-less keys, empty lines allowed inside values).
func parseINI(r io.Reader) ([]iniSection, error) {
	var (
		sections []iniSection
		seen     = map[string]bool{}
		cur      *iniSection
		lines    map[string][]string
		key      string
		indent   int
		lineNo   int
	)
	flush := func() {
		if cur == nil {
			return
		}
		for k, ls := range lines {
			cur.values[k] = strings.TrimRight(strings.Join(ls, "\n"), " \t\r\n")
		}
		sections = append(sections, *cur)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lineNo++
		raw := strings.TrimRight(sc.Text(), "\r")
		if lineNo == 1 {
			raw = strings.TrimPrefix(raw, "\ufeff")
		}
		value := strings.TrimSpace(raw)
		if strings.HasPrefix(value, "#") || strings.HasPrefix(value, ";") {
			continue
		}
		if value == "" {
			if cur != nil && key != "" {
				lines[key] = append(lines[key], "")
			}
			continue
		}
		lineIndent := len(raw) - len(strings.TrimLeft(raw, " \t"))
		if cur != nil && key != "" && lineIndent > indent {
			lines[key] = append(lines[key], value)
			continue
		}
		indent = lineIndent
		if strings.HasPrefix(value, "[") {
			end := strings.LastIndex(value, "]")
			if end < 2 {
				return nil, fmt.Errorf("line %d: malformed section header", lineNo)
			}
			name := value[1:end]
			if seen[name] {
				return nil, fmt.Errorf("line %d: section %q appears twice", lineNo, name)
			}
			seen[name] = true
			flush()
			cur = &iniSection{name: name, values: map[string]string{}}
			lines, key = map[string][]string{}, ""
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("line %d: a value before any [section]", lineNo)
		}
		i := strings.IndexAny(value, "=:")
		if i < 0 {
			return nil, fmt.Errorf("line %d: not key = value", lineNo)
		}
		k := strings.ToLower(strings.TrimSpace(value[:i]))
		if k == "" {
			return nil, fmt.Errorf("line %d: no key before '='", lineNo)
		}
		if _, dup := lines[k]; dup {
			return nil, fmt.Errorf("line %d: key %q appears twice in [%s]", lineNo, k, cur.name)
		}
		key = k
		lines[k] = []string{strings.TrimSpace(value[i+1:])}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	// The DEFAULT section's keys are inherited by every other section.
	for _, def := range sections {
		if def.name != "DEFAULT" {
			continue
		}
		for i := range sections {
			for k, v := range def.values {
				if _, ok := sections[i].values[k]; !ok {
					sections[i].values[k] = v
				}
			}
		}
	}
	return sections, nil
}

package lint

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/schemas"
)

// SkillFile is the file that describes a skill.
const SkillFile = "SKILL.md"

func (l *linter) lintSkillDir(d dirEntry) {
	// A listed skills directory that does not exist holds no skills.
	entries, ok := l.readListedDir(d, "skills", diag.SkillMissing, true)
	if !ok {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := path.Join(d.path, e.Name())
		if !e.IsDir() {
			if e.Type()&fs.ModeSymlink == 0 || !l.isDir(dir) {
				continue // files beside the skills (a README) are not skills
			}
		}
		l.lintSkill(dir)
		if l.fatal != nil {
			return
		}
	}
}

func (l *linter) lintSkill(dir string) {
	file := path.Join(dir, SkillFile)
	data, st := l.read(file)
	switch st {
	case fileMissing:
		l.add(file, 0, 0, diag.SkillMissing, "%s has no %s", dir, SkillFile)
		return
	case fileBad:
		return
	}
	if l.notText(file, data) {
		return
	}
	fm, offset, problem := frontMatter(data)
	if problem != "" {
		l.add(file, 1, 1, diag.SkillFrontmatter, "%s", problem)
		return
	}
	if len(bytes.TrimSpace(fm)) == 0 {
		l.add(file, 2, 1, diag.SkillFrontmatter, "the front matter is empty; it needs name and description")
		return
	}
	root, v, _ := l.loadYAML(file, schemas.Skill, offset, fm)
	m := asMap(v)
	if m == nil {
		return
	}
	if name, ok := asString(m["name"]); ok && name != "" && name != path.Base(dir) {
		_, n := schemas.Locate(root, "name")
		l.addAt(file, n, offset, diag.SkillName, "skill `%s` is in directory `%s`; they should match", name, path.Base(dir))
	}
}

// frontMatter returns the YAML between the --- line that opens SKILL.md
// and the next --- line, and the number of lines before it.
func frontMatter(data []byte) (fm []byte, offset int, problem string) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	first, rest, found := bytes.Cut(data, []byte("\n"))
	if strings.TrimRight(string(first), " \t\r") != "---" || !found {
		return nil, 0, "SKILL.md must start with front matter: a line ---, name and description, and a closing ---"
	}
	start := len(first) + 1
	pos := start
	for len(rest) > 0 {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		if strings.TrimRight(string(line), " \t\r") == "---" {
			return data[start:pos], 1, ""
		}
		pos += len(line) + 1
		rest = after
	}
	return nil, 0, "the front matter opened on line 1 is not closed with a --- line"
}

// notText reports a not-text finding, and true, when file's data has a NUL byte or invalid UTF-8.
func (l *linter) notText(file string, data []byte) bool {
	line, col, msg, bad := binaryText(data)
	if bad {
		l.add(file, line, col, diag.NotText, "%s", msg)
	}
	return bad
}

// binaryText finds a NUL byte or invalid UTF-8 in a text file that is not
// YAML (YAML is checked by schemas.ParseYAML).
func binaryText(data []byte) (line, col int, msg string, bad bool) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, col, fmt.Sprintf("not UTF-8 text: invalid byte 0x%02x", data[i]), true
		case r == 0:
			return line, col, "binary data: a NUL byte", true
		case r == '\n':
			line, col = line+1, 0
		}
		col++
		i += size
	}
	return 0, 0, "", false
}

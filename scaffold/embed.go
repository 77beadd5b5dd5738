package scaffold

import "embed"

// all: keeps __init__.py, .gitignore, .github and .claude, which embed skips by default.
//
//go:embed all:templates
var templatesFS embed.FS

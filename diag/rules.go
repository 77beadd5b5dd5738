package diag

import "fmt"

// DocsURL is the page that documents every rule, one anchor per rule ID, as the repository
// shows it at ref: a release's tag, so a link goes to the rules of the release that linked it.
func DocsURL(ref string) string {
	if ref == "" {
		ref = "main"
	}
	return "https://github.com/orchestrator-zero/oz0/blob/" + ref + "/docs/lint-rules.md"
}

// RuleID is a rule. Its text (String) is the rule's stable ID, which users see and write: in every
// output format, the docs' anchors and CI configurations. The IDs are constants of a number
// type, so that a checker naming a rule that does not exist, by a typo, does not compile; the
// constants are in the order of the docs.
type RuleID uint8

// The rules, one constant each; their texts, severities and docs are in the catalogue below.
const (
	ManifestMissing RuleID = iota + 1 // zero is no rule
	NotAFile
	FileTooLarge
	NotText
	YAMLSyntax
	YAMLLimits
	UnknownKey
	MissingKey
	InvalidValue
	PathEscape
	AgentsDirMissing
	IgnoredFile
	DuplicateHarness
	UnknownFormat
	ModuleMissing
	CommandMissing
	CommandOutsidePlugin
	ProgramNotFound
	FormatMismatch
	ResponsesAPI
	ToolNotInCode
	UnknownHarness
	UnknownModel
	DuplicateAgent
	AgentFilename
	InstructionsMissing
	InputSchema
	SchemaTooDeep
	TimeoutDuration
	MaxSteps
	AgentToolUnknown
	ApprovalUnlistedTool
	SkillMissing
	SkillFrontmatter
	SkillName
	TOMLSyntax
	BannedDependency
	UnpinnedDependency
	JSONSyntax
	LockMissing
	SymlinkLoop
	// The tenant's hooks file's.
	DuplicateName
	BadGlob
	BadRegex
	BadPlugin
	BadDuration
	EvalCase

	numRules // one past the last
)

// String is the rule's ID as users see it: manifest-missing.
func (id RuleID) String() string {
	if id >= numRules {
		return fmt.Sprintf("RuleID(%d)", uint8(id))
	}
	return catalogue[id].name
}

// Rule is the rule's entry in the catalogue.
func (id RuleID) Rule() Rule {
	if id == 0 || id >= numRules {
		return Rule{ID: id}
	}
	return Rules[id-1]
}

// MarshalText writes the rule's ID: a diagnostic's rule is its text in JSON.
func (id RuleID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads a rule's ID.
func (id *RuleID) UnmarshalText(b []byte) error {
	r, ok := ParseRuleID(string(b))
	if !ok && len(b) > 0 {
		return fmt.Errorf("unknown rule %q", b)
	}
	*id = r
	return nil
}

// ParseRuleID returns the rule whose ID is s.
func ParseRuleID(s string) (RuleID, bool) {
	id, ok := ruleByName[s]
	return id, ok
}

// Rule describes a lint rule. Its ID is stable: scripts, SARIF consumers
// and the docs refer to it.
type Rule struct {
	ID       RuleID
	Severity Severity // the default severity of its findings
	Short    string   // one line: what it checks
	Help     string   // what it checks, in full
	Example  string   // an example message
	Fix      string   // how to fix a finding

	name string // ID's text
}

// HelpURL is the rule's section of DocsURL(ref).
func (r Rule) HelpURL(ref string) string { return DocsURL(ref) + "#" + r.ID.String() }

// Rules is every rule, in the order of the docs (that of the constants).
var Rules = func() []Rule {
	rs := make([]Rule, 0, numRules-1)
	for id := RuleID(1); id < numRules; id++ {
		r := catalogue[id]
		r.ID = id
		rs = append(rs, r)
	}
	return rs
}()

var ruleByName = func() map[string]RuleID {
	m := make(map[string]RuleID, len(Rules))
	for _, r := range Rules {
		m[r.name] = r.ID
	}
	return m
}()

// catalogue is every rule's entry, by its constant: a rule named twice, or one without a
// constant, does not compile; TestCatalogue checks that none is left out.
var catalogue = [numRules]Rule{
	ManifestMissing: {
		name: "manifest-missing", Severity: Error,
		Short:   "The directory has no oz0-plugin.yaml.",
		Help:    "A plugin is a directory with an oz0-plugin.yaml at its top. Without it nothing else is checked.",
		Example: "no oz0-plugin.yaml in acme-triage; run `oz0 plugin new` or cd into the plugin",
		Fix:     "Run the linter in (or on) the plugin's directory, or create the plugin with `oz0 plugin new NAME --template byo-agent`.",
	},
	NotAFile: {
		name: "not-a-file", Severity: Error,
		Short:   "A file the plugin needs is a directory or another non-regular file.",
		Help:    "oz0-plugin.yaml, agents/*.yaml, SKILL.md, pyproject.toml, package.json and input/output schema files must be regular files (a symbolic link to one is fine). A directory, a pipe or a device in their place is reported and not read.",
		Example: "oz0-plugin.yaml is a directory, not a file",
		Fix:     "Replace it with a regular file, or rename the directory.",
	},
	FileTooLarge: {
		name: "file-too-large", Severity: Error,
		Short:   "A file the linter loads is over 1 MiB.",
		Help:    "Manifests, agent definitions, SKILL.md, pyproject.toml, package.json, schema files and eval files are small. A file over 1 MiB (1,048,576 bytes) is not parsed, so that a stray or hostile file cannot make the linter slow; oz0 eval refuses an eval file over it alike.",
		Example: "agents/big.yaml is 2097152 bytes; files the linter loads must be at most 1 MiB",
		Fix:     "Shrink the file; move data that is not configuration elsewhere.",
	},
	NotText: {
		name: "not-text", Severity: Error,
		Short:   "A file is binary, not UTF-8, or holds control characters.",
		Help:    "YAML, TOML and Markdown files must be UTF-8 text. A NUL byte, an invalid UTF-8 sequence or a control character that YAML forbids is reported at its position, and the file is not parsed further.",
		Example: "not UTF-8 text: invalid byte 0xff",
		Fix:     "Save the file as UTF-8 and remove the control characters; check that it is the file you meant.",
	},
	YAMLSyntax: {
		name: "yaml-syntax", Severity: Error,
		Short:   "A YAML file does not parse, repeats a key or holds more than one document.",
		Help:    "Reported at the line the YAML parser names (column 1 when it names none). A key defined twice in one mapping and a second document after --- are reported too: oz0 reads one document, and a repeated key would silently lose one of its values.",
		Example: "duplicate key `name` (first on line 2)",
		Fix:     "Fix the YAML at that line: indentation, a missing colon, an unclosed quote or bracket, a tab used for indentation.",
	},
	YAMLLimits: {
		name: "yaml-limits", Severity: Error,
		Short:   "A YAML file holds or expands to too many nodes, or nests too deep.",
		Help:    "A document may hold 100,000 nodes (keys, values and list items), aliases and merge keys expanded (a \"billion laughs\" document stops here; the message says how many of them came through aliases), nesting is limited to 64 levels, and an alias that refers to a node containing itself is refused. The file is not validated further.",
		Example: "too many aliases: the document expands to more than 100000 nodes, 99990 of them through aliases and merge keys",
		Fix:     "Write the values out instead of nesting aliases; flatten the structure.",
	},
	UnknownKey: {
		name: "unknown-key", Severity: Error,
		Short:   "A key the schema does not allow.",
		Help:    "The manifest, agent and skill front-matter schemas are strict: a misspelt key would otherwise be ignored silently. Reported at the key, with the closest allowed key when one is close, else the allowed keys.",
		Example: "unknown key `tool` in `harness`; did you mean `tools`?",
		Fix:     "Correct the spelling, or remove the key. `oz0 schema` lists the schemas and prints each; an editor reads them from the yaml-language-server line.",
	},
	MissingKey: {
		name: "missing-key", Severity: Error,
		Short:   "A required key is absent.",
		Help:    "Reported at the mapping that lacks it (the first key of the mapping, or line 1 for the document). The manifest requires apiVersion, name, version, runtime, harnesses and agents; a harness requires name and command; an agent requires name, runtime and instructions; a skill's front matter requires name and description.",
		Example: "missing required key `runtime`",
		Fix:     "Add the key.",
	},
	InvalidValue: {
		name: "invalid-value", Severity: Error,
		Short:   "A value of the wrong type, not among the allowed ones, or not matching its pattern.",
		Help:    "Reported at the value. Covers types (a string where a list is expected, a number where a string is expected), constants (apiVersion must be oz0/v1), enumerations (runtime), patterns (names, versions, tool names), lengths and item counts, repeated list items, mapping keys that are not strings and numbers that are not finite.",
		Example: "`max_steps` must be an integer, not a string",
		Fix:     "Write the value the message asks for; quote a version such as 1.0 that YAML would read as a number.",
	},
	PathEscape: {
		name: "path-escape", Severity: Error,
		Short:   "A path in the manifest or an agent is absolute or leaves the plugin directory.",
		Help:    "The agents and skills directories, an agent's instructions and its input/output schema files are paths relative to the plugin directory: a plugin is installed as a unit, so an absolute path or one that climbs out with .. would not exist where it runs. A symbolic link inside the plugin that leads outside it is refused the same way, wherever it is on the path (a prompt linked to /etc/passwd would otherwise become a model's system prompt); links that stay inside the plugin are fine.",
		Example: "`instructions` must be a path inside the plugin, not `../common/prompt.md`",
		Fix:     "Move the file into the plugin and use a relative path.",
	},
	AgentsDirMissing: {
		name: "agents-dir-missing", Severity: Error,
		Short:   "A directory listed under agents does not exist or is not a directory.",
		Help:    "Every entry of the manifest's agents must be a directory of agent definitions. (A skills directory that does not exist is fine: it holds no skills.)",
		Example: "agents directory `agents/` does not exist",
		Fix:     "Create the directory with the agent definitions, or correct the entry.",
	},
	IgnoredFile: {
		name: "ignored-file", Severity: Warning,
		Short:   "A file in an agents directory that is not loaded.",
		Help:    "Agent definitions are the *.yaml files of an agents directory. A *.yml file there looks like an agent but is not loaded.",
		Example: "agents/triage.yml is ignored: agent definitions end in .yaml",
		Fix:     "Rename it to .yaml, or move it out of the agents directory.",
	},
	DuplicateHarness: {
		name: "duplicate-harness", Severity: Error,
		Short:   "Two harnesses of the manifest have the same name.",
		Help:    "Agents select a harness by name (runtime: harness:NAME), so harness names must be unique.",
		Example: "harness `acme-triage` is declared twice (first on line 8)",
		Fix:     "Rename or remove one of them.",
	},
	UnknownFormat: {
		name: "unknown-format", Severity: Error,
		Short:   "A harness lists no model API formats, or one oz0 does not know.",
		Help:    "formats names the model APIs the harness's code speaks: anthropic-messages (Anthropic's Messages API) and openai-chat (OpenAI's Chat Completions). An agent's model: {use: default} resolves to a provider record that takes one of them, so a harness needs at least one.",
		Example: "harness `acme-triage` has unknown format `anthropic`; did you mean `anthropic-messages`?",
		Fix:     "List the formats your code speaks: formats: [anthropic-messages], [openai-chat] or both.",
	},
	ModuleMissing: {
		name: "module-missing", Severity: Error,
		Short:   "A harness command runs python -m MODULE and the module is not in the plugin.",
		Help:    "For a command whose program is python, python3 or pythonX.Y, the module after -m must exist under src/ (or at the top of the plugin, for a flat layout): a package directory with __main__.py (python -m runs a package's __main__), or a MODULE.py file. A dotted name a.b is looked up as a/b.",
		Example: "harness `acme-triage` runs module `acme_triage`, but there is no src/acme_triage/__main__.py or src/acme_triage.py",
		Fix:     "Create the module (the byo-agent template has src/NAME/__main__.py), or correct the command.",
	},
	CommandMissing: {
		name: "command-missing", Severity: Error,
		Short:   "A harness command runs a file that is not in the plugin.",
		Help:    "The node runs a harness's command in the session's own empty working directory, and resolves against the plugin's directory the program when it is written as a path (./bin/agent) and the file an interpreter runs: node harness.mjs, deno run main.ts, bun run index.ts, python agent.py, bash run.sh. That file must exist in the plugin. Other arguments are passed as written.",
		Example: "harness `shop` runs node `harness.mjs`, which is not a file of the plugin (it is resolved against the plugin's directory)",
		Fix:     "Create the file, or correct the command; paths are relative to the plugin's directory.",
	},
	CommandOutsidePlugin: {
		name: "command-outside-plugin", Severity: Warning,
		Short:   "A harness command runs a program or script outside the plugin.",
		Help:    "A harness's command is resolved against the plugin's directory, and a session's sandbox (the default tier, standard) shows the plugin and the system's directories (/usr, /bin, /lib, /etc, /opt, …) only. A script named by an absolute path (python3 /home/me/x/agent.py), or a program by an absolute path outside the system's directories, does not ship with the plugin: it is on no other machine, and behind the sandbox a session does not see it, so every session fails.",
		Example: "harness `acme-triage` runs `/home/me/x/agent.py`, a file outside the plugin: it does not ship with the plugin, and a session's sandbox shows the plugin and the system's directories only, so every session would fail; copy it into the plugin and name it relative to it",
		Fix:     "Copy the file into the plugin and name it relative to the plugin's directory (python3 agent.py, ./bin/harness), or run a program on the PATH.",
	},
	ProgramNotFound: {
		name: "program-not-found", Severity: Warning,
		Short:   "A harness command's program is not on this machine's PATH.",
		Help:    "A bare program name (node, deno, my-agent) is looked up on the session's PATH. Python is not checked: the node runs the plugin's .venv python when there is one. A warning, since the machine that runs the plugin may have what this one lacks.",
		Example: "harness `shop` runs `deno`, which is not on this machine's PATH",
		Fix:     "Install the program, or write the command with a path inside the plugin.",
	},
	FormatMismatch: {
		name: "format-mismatch", Severity: Warning,
		Short:   "A harness lists a model format its code builds no client for.",
		Help:    "A session gets a model record that takes one of the formats its harness lists, and its code must speak that record's API. Lint reads the code a harness runs for the model clients it names: for a Python harness (python -m PACKAGE) the package, for a JavaScript or TypeScript harness (node src/main.mjs, deno run main.ts, bun run index.ts) the script's directory, node_modules left out. Anthropic's clients are AnthropicModel, AnthropicLlm, AnthropicClient, ChatAnthropic, createAnthropic and the SDKs' Anthropic and AsyncAnthropic; OpenAI Chat Completions' are OpenAIModel, OpenAILlm, OpenAIChatCompletionClient, ChatOpenAI, createOpenAI and the SDKs' OpenAI and AsyncOpenAI. A listed format with no client of its own, in code that names clients of other formats and does not call session.complete() (which speaks the record's format), is reported: a session on such a record would fail. Comments and strings are not read; code that builds its clients elsewhere is not judged.",
		Example: "harness `shop` lists openai-chat, but its code builds no model client that speaks it (it builds `AnthropicModel` in src/shop/wiring.py, which speaks anthropic-messages): a session on a record of that format would fail; list only the formats the code speaks, or build a client for it",
		Fix:     "List only the formats the code speaks, or build a client for the other in the session's format (session.model.format_name).",
	},
	ResponsesAPI: {
		name: "responses-api", Severity: Error,
		Short:   "A harness's code uses OpenAI's Responses API, which the gateway does not serve.",
		Help:    "The gateway's OpenAI face serves Chat Completions (POST /chat/completions). Clients of OpenAI's Responses API are refused: in Python, Strands' OpenAIResponsesModel, ADK's OpenAIResponsesLlm, Agent Framework's OpenAIChatClient (its Chat Completions client is OpenAIChatCompletionClient) and the SDK's client.responses.create(); in JavaScript and TypeScript, Strands' OpenAIModel built without api: \"chat\" (its default is the Responses API; options passed as a variable are not judged) and the SDK's client.responses.create().",
		Example: "harness `shop` uses `OpenAIChatClient`, which speaks OpenAI's Responses API; the gateway serves Chat Completions: use the framework's Chat Completions client",
		Fix:     "Use the framework's Chat Completions client: OpenAIModel (Strands in Python; in TypeScript, OpenAIModel with api: \"chat\"), OpenAILlm (ADK), OpenAIChatCompletionClient (Agent Framework), client.chat.completions.create (the SDKs).",
	},
	ToolNotInCode: {
		name: "tool-not-in-code", Severity: Warning,
		Short:   "A harness lists tools its code names none of.",
		Help:    "The tools a harness's sessions may call are those of the harness in oz0-plugin.yaml and those its agents list under harness.tools; a call of any other is denied. Lint reads the code a harness runs, as for format-mismatch (a Python harness's package, a JavaScript or TypeScript harness's script directory, node_modules left out), for each of those tools' names as a whole word: a function (def notify_team), a string (\"notify_team\", name: 'notify_team'). When the code names none of them, most often a tool was renamed in the code and not in the manifest, and every call of it is denied. A harness whose code cannot be read, or names one of those tools (an agent's own, as the guide's LangGraph example lists), is not reported.",
		Example: "harness `acme-triage` lists the tools notify_team, but its code (src/acme_triage) names none of them: a session may call only the tools listed, and a call of another is denied; list the tools its code calls",
		Fix:     "List the tools the code calls under the harness's tools (and the agents' harness.tools, requires_approval).",
	},
	UnknownHarness: {
		name: "unknown-harness", Severity: Error,
		Short:   "An agent's runtime names a harness the manifest does not declare.",
		Help:    "runtime: harness:NAME must name one of the harnesses of oz0-plugin.yaml. The closest name is suggested.",
		Example: "runtime names harness `acme-triag`, which oz0-plugin.yaml does not declare; did you mean `acme-triage`?",
		Fix:     "Correct the name, or add the harness to the manifest.",
	},
	UnknownModel: {
		name: "unknown-model", Severity: Error,
		Short:   "An agent's model.use is a near miss of the alias or a model record.",
		Help:    "model: {use: NAME} names the alias default (the first record that takes a format the harness speaks) or a model record: anthropic and openai (a tenant's once its key is set) and fake, the fake model. A name that is none of them but a near miss of one (defualt, antropic) is a typo: no job of the agent could start (oz0 run refuses it, exit 2). A name far from all of them is left to the tenant, whose records may have other names.",
		Example: "model.use is `defualt`, which is neither the alias default nor a model record (anthropic, openai, fake); did you mean `default`?",
		Fix:     "Correct the name; `default` takes whichever record speaks the harness's formats.",
	},
	DuplicateAgent: {
		name: "duplicate-agent", Severity: Error,
		Short:   "Two agent definitions have the same name.",
		Help:    "Agents are run by name (oz0 run NAME), so agent names must be unique across all agents directories of the plugin.",
		Example: "agent `acme-triage` is also defined in agents/acme-triage.yaml",
		Fix:     "Rename or remove one of them.",
	},
	AgentFilename: {
		name: "agent-filename", Severity: Warning,
		Short:   "An agent definition's file name differs from its name.",
		Help:    "agents/NAME.yaml should define the agent NAME, so that the agent is found where its name says.",
		Example: "agent `acme-triage` is defined in triage.yaml; name the file acme-triage.yaml",
		Fix:     "Rename the file, or the agent.",
	},
	InstructionsMissing: {
		name: "instructions-missing", Severity: Error,
		Short:   "An agent's instructions file is missing or empty.",
		Help:    "instructions is the path, relative to the plugin, of the agent's system prompt. The file must exist and hold more than white space.",
		Example: "instructions file prompts/acme-triage.md does not exist",
		Fix:     "Create the file with the agent's instructions, or correct the path.",
	},
	InputSchema: {
		name: "input-schema", Severity: Error,
		Short:   "An input or output schema is missing, not JSON, or not a valid JSON Schema.",
		Help:    "input: {schema: ...} and output: {schema: ...} take an inline JSON Schema or the path of a .json file relative to the plugin. The schema is compiled as JSON Schema draft 2020-12 (unless it names another draft with $schema). The linter reads no network and no file outside the plugin: a $ref must point inside the schema or at another file of the plugin; relative references in an inline schema resolve against the plugin directory.",
		Example: "input schema schemas/ticket.json is not a valid JSON Schema: at '/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'",
		Fix:     "Correct the schema, or the path.",
	},
	SchemaTooDeep: {
		name: "schema-too-deep", Severity: Error,
		Short:   "An input or output schema file, or a file it refers to, nests deeper than 64 levels.",
		Help:    "Objects and arrays within each other count as levels, as in YAML files (yaml-limits). Compiling a schema costs more than its size: a 100 KB schema of 4,000 nested items took oz0 plugin lint over a minute and 300 MB. A schema past the limit is not compiled; a structure that nests without end is written with $ref to itself.",
		Example: "input schema schemas/ticket.json nests deeper than 64 levels",
		Fix:     "Flatten the schema: name a part that repeats once under $defs and refer to it with $ref (recursively, for a structure of any depth).",
	},
	TimeoutDuration: {
		name: "timeout-duration", Severity: Error,
		Short:   "limits.timeout is not a positive Go duration.",
		Help:    "timeout is a Go duration: a number with a unit, such as 90s, 10m or 1h30m (units ns, us, ms, s, m, h). It must be greater than zero.",
		Example: "`timeout` must be a duration such as 10m or 90s, not `10 minutes`",
		Fix:     "Write the timeout as a duration with a unit, e.g. 10m.",
	},
	MaxSteps: {
		name: "max-steps", Severity: Error,
		Short:   "limits.max_steps is less than 1.",
		Help:    "max_steps is the most model calls a session makes; a session needs at least one.",
		Example: "`max_steps` must be at least 1, not 0",
		Fix:     "Set it to 1 or more, or remove it for the default.",
	},
	AgentToolUnknown: {
		name: "agent-tool-unknown", Severity: Warning,
		Short:   "An agent lists a tool that is a near miss of one its harness has.",
		Help:    "The tools of a harness in oz0-plugin.yaml are what a session may call when its agent lists none; an agent's harness.tools may name others (a tool its own code adds, as the guide's LangGraph example does). A name its harness does not list but that is a near miss of one it does is most often a typo: the harness never calls it, so the agent works without it and oz0 plugin test says that no tool_result came. The warning names the tool the harness has.",
		Example: "harness.tools lists `notify_tem`, which harness `acme-triage` does not (its tools: notify_team); did you mean `notify_team`?",
		Fix:     "Correct the name; a tool of the agent's own that is meant to differ is best named apart from the harness's.",
	},
	ApprovalUnlistedTool: {
		name: "approval-unlisted-tool", Severity: Error,
		Short:   "requires_approval lists a tool the agent may not call.",
		Help:    "The tools an agent may call are its harness.tools, or, when it lists none, the tools of its harness in oz0-plugin.yaml. A request for any other tool is denied at once, before approvals, so listing it under requires_approval has no effect and is most likely a mistake.",
		Example: "`notify_team` requires approval but the agent may not call it; add it to harness.tools",
		Fix:     "Add the tool to the agent's harness.tools (or the harness's tools), or remove it from requires_approval.",
	},
	SkillMissing: {
		name: "skill-missing", Severity: Error,
		Short:   "A directory in a skills directory has no SKILL.md.",
		Help:    "Each subdirectory of a skills directory listed in the manifest is a skill, described by its SKILL.md. Hidden directories (starting with .) are skipped.",
		Example: "skills/summarize has no SKILL.md",
		Fix:     "Add SKILL.md with front matter (name, description), or move the directory out of the skills directory.",
	},
	SkillFrontmatter: {
		name: "skill-frontmatter", Severity: Error,
		Short:   "SKILL.md does not start with YAML front matter between --- lines.",
		Help:    "SKILL.md must begin with a line ---, the front matter (YAML: name, description, and optionally license, compatibility, allowed-tools, metadata), and a closing line ---. Problems inside the front matter are reported under the general rules (yaml-syntax, unknown-key, missing-key, invalid-value) at their line in SKILL.md.",
		Example: "SKILL.md must start with front matter: a line ---, name and description, and a closing ---",
		Fix:     "Add the front matter at the top of the file.",
	},
	SkillName: {
		name: "skill-name", Severity: Warning,
		Short:   "A skill's name differs from its directory's name.",
		Help:    "Skills are found by directory; a skill named differently from its directory is confusing, and other tools that read skills require them to match.",
		Example: "skill `summarise` is in directory `summarize`; they should match",
		Fix:     "Rename the directory or the skill.",
	},
	TOMLSyntax: {
		name: "toml-syntax", Severity: Error,
		Short:   "pyproject.toml does not parse.",
		Help:    "pyproject.toml is read for the dependency rules; a file that does not parse as TOML is reported at the position the parser names.",
		Example: "expected character =",
		Fix:     "Fix the TOML at that position.",
	},
	BannedDependency: {
		name: "banned-dependency", Severity: Error,
		Short:   "pyproject.toml depends on litellm.",
		Help:    "Orchestrator Zero keeps litellm out of everything it runs after the LiteLLM supply-chain incident of March 2026. A dependency on litellm, on any package's litellm extra (such as crewai[litellm]), or on a framework's extra known to bring it in (google-adk[extensions] and google-adk[all], strands-agents[all]), in [project] dependencies, optional-dependencies, [dependency-groups] or [tool.uv] dev-dependencies is an error. Model calls go through the gateway: use the Anthropic or OpenAI SDK, or the framework's own provider extra (crewai[anthropic]).",
		Example: "`crewai[litellm]` pulls in litellm: Orchestrator Zero keeps litellm out of everything it runs after the LiteLLM supply-chain incident of March 2026; use crewai[anthropic]",
		Fix:     "Remove the dependency; for CrewAI use crewai[anthropic] and pin it.",
	},
	UnpinnedDependency: {
		name: "unpinned-dependency", Severity: Warning,
		Short:   "An agent framework in pyproject.toml, or a package in package.json, is not pinned to one version.",
		Help:    "Agent frameworks change fast, and a harness that passed oz0 plugin test yesterday can break with today's release. In pyproject.toml, langgraph, langchain*, crewai, openai-agents, google-adk, strands-agents, agent-framework* and autogen* should be pinned to one version with == (or ===); a direct URL reference counts as pinned. In package.json, every package a session runs (dependencies, optionalDependencies) should be one exact version, as npm install --save-exact writes it (\"1.19.0\", not \"^1.19.0\"); an npm: alias of one version, a git reference by commit, a tarball and the plugin's own packages (file:, link:, workspace:) count as pinned.",
		Example: "`@strands-agents/sdk` is `^1.19.0` in package.json dependencies, not one version; pin it exactly (npm install --save-exact @strands-agents/sdk@X.Y.Z) and commit package-lock.json",
		Fix:     "Pin the version (uv add 'langgraph==X.Y.Z'; npm install --save-exact NAME@X.Y.Z), and update it deliberately.",
	},
	JSONSyntax: {
		name: "json-syntax", Severity: Error,
		Short:   "package.json does not parse.",
		Help:    "package.json is read for the dependency rules; a file that is not a JSON object is reported at the position the parser names. npm cannot install from it either.",
		Example: "package.json does not parse as a JSON object: invalid character '}' looking for beginning of object key string",
		Fix:     "Fix the JSON at that position (a trailing comma, a missing quote).",
	},
	LockMissing: {
		name: "lock-missing", Severity: Warning,
		Short:   "package.json has dependencies and the plugin has no lock file.",
		Help:    "Pinning a package pins it alone: what it depends on is pinned only by a lock file (package-lock.json, npm-shrinkwrap.json, yarn.lock, pnpm-lock.yaml, bun.lock or bun.lockb), which npm ci installs exactly.",
		Example: "package.json has dependencies but the plugin has no lock file: what they depend on is not pinned; run npm install and commit package-lock.json",
		Fix:     "Run npm install (or your package manager's install) and commit the lock file; install with npm ci.",
	},
	SymlinkLoop: {
		name: "symlink-loop", Severity: Error,
		Short:   "A symbolic link in the plugin loops.",
		Help:    "A path the plugin names (the manifest, an agents or skills directory, a prompt, a schema file) goes through symbolic links that point at each other, so it leads nowhere. It is reported where the path is named, and not read.",
		Example: "`agents` entry `agents/` is a symbolic link that loops",
		Fix:     "Point the link at a real file or directory inside the plugin, or replace it with one.",
	},
	// Rules of the tenant's hooks file (oz0 dev --hooks; oz0 plugin lint --hooks). Its schema
	// problems are reported under the general rules above.
	DuplicateName: {
		name: "duplicate-name", Severity: Error,
		Short:   "Two hooks of a hooks file have the same name.",
		Help:    "A hook's name is how the trace says who decided a call (hook:NAME), so names must be unique within the hooks file.",
		Example: "hook name `redact` is used twice (first on line 8); names must be unique",
		Fix:     "Rename or remove one of them.",
	},
	BadGlob: {
		name: "bad-glob", Severity: Error,
		Short:   "A hook's match glob does not compile, or can never match.",
		Help:    "Hooks see calls as <harness>.<tool> and match them with globs (* within a name, ** across the dot, [abc] classes). A glob that does not compile, or one without a dot that can never match <harness>.<tool>, is reported at the glob.",
		Example: "`notify_team` never matches: hooks see calls as <harness>.<tool>; did you mean `*.notify_team`?",
		Fix:     "Write the glob as <harness>.<tool>, e.g. acme-triage.notify_team or *.notify_team.",
	},
	BadRegex: {
		name: "bad-regex", Severity: Error,
		Short:   "A hook's when/unless regular expression does not compile.",
		Help:    "The regular expressions of a hook's when and unless conditions are Go RE2 syntax; one that does not compile is reported at its value.",
		Example: "`^(legal|exec$` is not a valid regular expression (Go RE2 syntax): missing closing ): `^(legal|exec$`",
		Fix:     "Correct the expression (RE2 has no lookaround or backreferences).",
	},
	BadPlugin: {
		name: "bad-plugin", Severity: Error,
		Short:   "A hook's plugin is not an executable file, or its environment is wrong.",
		Help:    "A plugin hook's plugin is the path (relative to the hooks file) of an executable built with oz0's hook SDK. It must exist, be a regular file and be executable; its env keys must be environment variable names that oz0 does not set itself for the handshake.",
		Example: "plugin `./hooks/policy` is not executable; chmod +x it",
		Fix:     "Build the plugin, correct the path, or chmod +x it; rename a reserved env key.",
	},
	BadDuration: {
		name: "bad-duration", Severity: Error,
		Short:   "A hook's timeout is not a duration between 1ms and 5m.",
		Help:    "timeout is how long oz0 waits for a plugin hook's answer to one call: a Go duration (500ms, 2s, 1m) of at least 1ms and at most 5m. A hook that does not answer in time denies the call (hooks fail closed).",
		Example: "`timeout` must be a duration such as 500ms, 2s or 1m, not `soon`",
		Fix:     "Write a duration within the range.",
	},
	EvalCase: {
		name: "eval-case", Severity: Error,
		Short:   "An eval file's case cannot run as written.",
		Help:    "oz0 eval runs the cases of evals/*.yaml (schemas/eval.schema.json) through the agent the file names. The agent must be one of the plugin's, case names must be unique in the file (each names its recording), a script: or a .yaml recording: (oz0 job script's) must name a file that is there (a .json recording may be absent: oz0 eval --record makes it), and each assertion must be one oz0 can check: a regular expression that compiles, a path it can read, a JSON Schema that compiles, a duration; a timeout (the file's, a case's) is a duration longer than 0.",
		Example: "case name `billing` is used twice (first on line 6); names must be unique",
		Fix:     "Correct the case as the message says; oz0 eval --help and docs/eval.md describe the format.",
	},
}

// MaxFileSize is the largest file of a plugin's that oz0 parses (the file-too-large rule): its
// manifest, agents, skills, schemas, pyproject.toml, package.json, eval files.
const MaxFileSize = 1 << 20

// TooLarge is the file-too-large message of the file name, size bytes long; a size below 0 is
// over MaxFileSize by an amount not known (the file grew as it was read).
func TooLarge(name string, size int64) string {
	if size < 0 {
		return name + " is over 1 MiB; files the linter loads must be at most 1 MiB"
	}
	return fmt.Sprintf("%s is %d bytes; files the linter loads must be at most 1 MiB", name, size)
}

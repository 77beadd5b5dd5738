#!/bin/sh
# Adds the envprobe harness and agent (envprobe/__main__.py beside this file) to the plugin in the
# current directory: its module in src/, its harness in oz0-plugin.yaml, its agent and prompt.
set -eu
here=$(dirname "$0")
mkdir -p src/envprobe agents prompts
cp "$here/envprobe/__main__.py" src/envprobe/__main__.py
awk '{ print } /^harnesses:$/ { print "  - name: envprobe"; print "    command: [\"python\", \"-m\", \"envprobe\"]"; print "    formats: [anthropic-messages, openai-chat]" }' oz0-plugin.yaml > oz0-plugin.yaml.new
mv oz0-plugin.yaml.new oz0-plugin.yaml
cat > agents/envprobe.yaml <<'YAML'
name: envprobe
description: Says what the frameworks beside it read from the environment
runtime: harness:envprobe
model:
  use: default
instructions: prompts/envprobe.md
input: text
output: text
YAML
echo "Say what you read." > prompts/envprobe.md

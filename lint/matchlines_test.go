package lint

import (
	"slices"
	"testing"
)

// matchLines must find what the whole-text search finds, for every client pattern.
func TestMatchLinesAgreesWithTheWholeTextSearch(t *testing.T) {
	code := "from anthropic import Anthropic\nclient = AsyncAnthropic()\nx=ChatAnthropic(model) ; y = OpenAIModel()\n" +
		"NotAnthropicX = 1\nAnthropic\nr = c.responses.create(\nc.responses.stream( OpenAIResponsesModel OpenAIChatClient\n" +
		"z.responses(\nOpenAI" // no newline at the end; matches at the first and last byte
	for _, ps := range [][]clientPattern{pythonPatterns, jsPatterns} {
		for _, p := range ps {
			want := p.re().FindAllStringIndex(code, -1)
			got := matchLines(p.re(), p.lits, code)
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("%s: matchLines %v, the whole text %v", p.re(), got, want)
			}
			if len(want) == 0 {
				t.Errorf("%s: the sample has no match; it tests nothing", p.re())
			}
		}
	}
}

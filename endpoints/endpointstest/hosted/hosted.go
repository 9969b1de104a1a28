// Package hosted holds hosted providers' answers as their users quote them,
// for the tests that play those providers (docs/SERVERS.md, "Hosted
// OpenAI-compatible APIs"). It imports nothing, so a test of any package,
// reports/summary's included, can use it.
package hosted

// Error bodies, each with the thread that quotes it.
const (
	// GeminiUnknownIgnoreEOS is Gemini's OpenAI-compatible route refusing
	// a field it does not know, in Google's array-shaped error
	// (bytedance/deer-flow#1515 for "thinking"; the same wording for any
	// name).
	GeminiUnknownIgnoreEOS = `[{
  "error": {
    "code": 400,
    "message": "Invalid JSON payload received. Unknown name \"ignore_eos\": Cannot find field.",
    "status": "INVALID_ARGUMENT",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        "fieldViolations": [
          {
            "description": "Invalid JSON payload received. Unknown name \"ignore_eos\": Cannot find field."
          }
        ]
      }
    ]
  }
}
]`
	// GeminiQuota is Gemini's 429 (n4ze3m/page-assist#406, on
	// /v1beta/openai/chat/completions).
	GeminiQuota = "[{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"Resource has been exhausted (e.g. check quota).\",\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n}\n]"
	// GroqUnknownIgnoreEOS is Groq refusing a property it does not know
	// (fanenr/chatbot#21 for "store").
	GroqUnknownIgnoreEOS = `{"error":{"message":"property 'ignore_eos' is unsupported, did you mean 'stop'?","type":"invalid_request_error"}}`
	// AnthropicOverloaded is Anthropic's API overloaded for everyone: 529
	// overloaded_error.
	AnthropicOverloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
)

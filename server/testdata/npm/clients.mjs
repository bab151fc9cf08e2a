// Runs the official OpenAI and Cohere JavaScript clients against a vembed
// server and prints what they return as one JSON object; the Go test
// TestJSClients (package server) compares it with /v1/embeddings.
// Environment: VEMBED_URL (the server), VEMBED_KEY (an API key it takes),
// VEMBED_IMAGE (a PNG as base64).
import OpenAI from "openai";
import { CohereClientV2 } from "cohere-ai";

const url = process.env.VEMBED_URL;
const key = process.env.VEMBED_KEY;
const image = "data:image/png;base64," + process.env.VEMBED_IMAGE;
const types = ["float", "int8", "uint8", "binary", "ubinary", "base64"];
const longText = "one two three four five six seven eight nine ten eleven twelve";

const openai = new OpenAI({ baseURL: url + "/v1", apiKey: key, maxRetries: 0 });
const cohere = new CohereClientV2({ token: key, baseUrl: url });

const out = {};
// The OpenAI client asks for base64 by default and decodes it.
out.openaiDefault = (await openai.embeddings.create({ model: "demo", input: ["alpha", "beta gamma"] })).data.map((d) => d.embedding);
out.openaiFloat16 = (await openai.embeddings.create({ model: "demo", input: "alpha", encoding_format: "float", dimensions: 16 })).data.map((d) => d.embedding);

const texts = await cohere.embed({ model: "demo", texts: ["alpha", "beta gamma"], inputType: "search_document", embeddingTypes: types });
out.cohereTexts = { embeddings: texts.embeddings, texts: texts.texts, id: texts.id, version: texts.meta?.apiVersion?.version };
out.cohereQuery = (await cohere.embed({ model: "demo", texts: ["alpha"], inputType: "search_query", embeddingTypes: ["float"], outputDimension: 16 })).embeddings;
out.cohereImages = (await cohere.embed({ model: "demo", images: [image], inputType: "image", embeddingTypes: types })).embeddings;
out.cohereInputs = (await cohere.embed({
  model: "demo",
  inputType: "search_document",
  embeddingTypes: types,
  inputs: [{ content: [{ type: "text", text: "figure 3:" }, { type: "image_url", imageUrl: { url: image } }] }],
})).embeddings;

const ranked = await cohere.rerank({ model: "demo", query: "which one?", documents: ["the first document", "another text entirely", "short"], topN: 2 });
out.cohereRerank = ranked.results.map((r) => ({ index: r.index, relevance_score: r.relevanceScore }));

// Truncation from the start, with the client's own names for it.
out.cohereStart = (await cohere.embed({ model: "demo", texts: [longText], inputType: "search_query", embeddingTypes: ["float"], maxTokens: 8, truncate: "START" })).embeddings;

// A refusal reaches the client as its error type, with the server's message.
try {
  await cohere.embed({ model: "demo", texts: [longText], inputType: "search_query", embeddingTypes: ["float"], maxTokens: 8, truncate: "NONE" });
  out.cohereError = "no error";
} catch (e) {
  out.cohereError = `${e.statusCode} ${JSON.stringify(e.body)}`;
}

process.stdout.write(JSON.stringify(out));

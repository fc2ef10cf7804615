// deploy/'s manifests against their schemas, the facts that tie them
// together, and bonsai's own /metrics page (BONSAI_METRICS_PAGE, written by
// run.sh from a running `bonsai serve`): every metric a router or the
// autoscaler reads must be one bonsai writes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { documents, validateDocument } from "./validate.mjs";

// run.sh runs this file from a copy: BONSAI_DEPLOY_DIR names the tree's deploy/.
const deploy = process.env.BONSAI_DEPLOY_DIR
  ? pathToFileURL(`${process.env.BONSAI_DEPLOY_DIR}/`)
  : new URL("../../deploy/", import.meta.url);
const files = readdirSync(deploy).filter((f) => f.endsWith(".yaml"));
const all = Object.fromEntries(files.map((f) => [f, documents(readFileSync(new URL(f, deploy), "utf8"))]));
const find = (kind) => Object.values(all).flat().find((d) => d.kind === kind);

test("every document of deploy/*.yaml validates against its schema", () => {
  assert.ok(files.length >= 5, `found ${files}`);
  for (const [file, docs] of Object.entries(all))
    docs.forEach((doc, i) => assert.deepEqual(validateDocument(doc), [], `${file}, document ${i + 1}`));
});

test("the validators refuse what the API servers would", () => {
  const deployment = structuredClone(find("Deployment"));
  deployment.spec.replicas = "two";
  assert.notDeepEqual(validateDocument(deployment), []);
  const scaled = structuredClone(find("ScaledObject"));
  delete scaled.spec.scaleTargetRef;
  assert.notDeepEqual(validateDocument(scaled), []);
  const route = structuredClone(find("HTTPRoute"));
  route.spec.rules[0].matches[0].path.type = "Prefix"; // Gateway API says PathPrefix
  assert.notDeepEqual(validateDocument(route), []);
  const pool = structuredClone(find("InferencePool"));
  pool.spec.targetPort = pool.spec.targetPorts; // a misspelt field
  assert.notDeepEqual(validateDocument(pool), []);
  const picker = structuredClone(find("EndpointPickerConfig"));
  picker.plugins[1].parameters.engineConfigs[0].kvUsage = "x"; // the router decodes strictly
  assert.notDeepEqual(validateDocument(picker), []);
  assert.notDeepEqual(validateDocument({ apiVersion: "v1", kind: "Pod" }), []);
});

test("the pool, the route, the picker and the autoscaler name the same pods", () => {
  const deployment = find("Deployment");
  const labels = deployment.spec.template.metadata.labels;
  const container = deployment.spec.template.spec.containers[0];
  const pool = find("InferencePool");
  for (const [k, v] of Object.entries(pool.spec.selector.matchLabels)) assert.equal(labels[k], v);
  assert.ok(container.ports.some((p) => p.containerPort === pool.spec.targetPorts[0].number));
  const route = find("HTTPRoute");
  assert.equal(route.spec.rules[0].backendRefs[0].name, pool.metadata.name);
  const picker = find("EndpointPickerConfig");
  const extractor = picker.plugins.find((p) => p.type === "core-metrics-extractor").parameters;
  assert.equal(labels["llm-d.ai/engine-type"], extractor.engineConfigs[0].name);
  assert.equal(extractor.defaultEngine, extractor.engineConfigs[0].name);
  const scaled = find("ScaledObject");
  assert.equal(scaled.spec.scaleTargetRef.name, deployment.metadata.name);
  const parallel = container.args[container.args.indexOf("--parallel") + 1];
  assert.equal(scaled.spec.triggers[0].metadata.threshold, parallel, "target = --parallel per replica");
  const monitor = find("PodMonitor");
  assert.ok(container.ports.some((p) => p.name === monitor.spec.podMetricsEndpoints[0].port));
});

test("every metric the picker and KEDA read is on bonsai's /metrics page", { skip: !process.env.BONSAI_METRICS_PAGE }, () => {
  const page = readFileSync(process.env.BONSAI_METRICS_PAGE, "utf8");
  const written = new Set(page.split("\n").filter((l) => l && !l.startsWith("#")).map((l) => l.split(/[{ ]/)[0]));
  const engine = find("EndpointPickerConfig").plugins.find((p) => p.type === "core-metrics-extractor").parameters.engineConfigs[0];
  const read = ["queuedRequestsSpec", "runningRequestsSpec", "kvUsageSpec", "cacheInfoSpec"].map((k) => engine[k]);
  read.push(...find("ScaledObject").spec.triggers[0].metadata.query.match(/bonsai_[a-z_]+/g));
  for (const name of read) assert.ok(written.has(name), `${name} is not on the page`);
  const info = page.split("\n").find((l) => l.startsWith(`${engine.cacheInfoSpec}{`));
  assert.match(info, new RegExp(`${engine.cacheBlockSizeLabelName}="\\d+"`));
  assert.match(info, new RegExp(`${engine.cacheNumBlocksLabelName}="\\d+"`));
});

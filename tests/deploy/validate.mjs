// Validates Kubernetes manifests and the endpoint picker's configuration:
// each YAML document is checked against the schema of its apiVersion and
// kind (kubernetes-models' generated validators for Kubernetes, KEDA, the
// Prometheus Operator and the Gateway API; schemas/ for the InferencePool
// and the EndpointPickerConfig, which npm has no package for). A document
// of a kind without a schema is an error: nothing goes unchecked.
import { readFileSync } from "node:fs";
import { Ajv } from "ajv";
import { parseAllDocuments } from "yaml";
import { Deployment } from "kubernetes-models/apps/v1";
import { Service } from "kubernetes-models/v1";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1";
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import { HTTPRoute } from "@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1";

const here = new URL(".", import.meta.url);
const ajv = new Ajv({ allErrors: true, strict: false });
const schema = (file) => ajv.compile(JSON.parse(readFileSync(new URL(`schemas/${file}`, here))));

function modelCheck(Model) {
  return (doc) => {
    try {
      new Model(doc).validate();
      return [];
    } catch (error) {
      return [error.message];
    }
  };
}

function schemaCheck(validate) {
  return (doc) =>
    validate(doc) ? [] : validate.errors.map((e) => `${e.instancePath || "/"} ${e.message}`);
}

const checks = {
  "apps/v1 Deployment": modelCheck(Deployment),
  "v1 Service": modelCheck(Service),
  "keda.sh/v1alpha1 ScaledObject": modelCheck(ScaledObject),
  "monitoring.coreos.com/v1 PodMonitor": modelCheck(PodMonitor),
  "gateway.networking.k8s.io/v1 HTTPRoute": modelCheck(HTTPRoute),
  "inference.networking.k8s.io/v1 InferencePool": schemaCheck(schema("inferencepool-v1.json")),
  "llm-d.ai/v1alpha1 EndpointPickerConfig": schemaCheck(
    schema("endpointpickerconfig-v1alpha1.json"),
  ),
};

// The problems of one document: [] when it validates.
export function validateDocument(doc) {
  const key = `${doc?.apiVersion} ${doc?.kind}`;
  const check = checks[key];
  if (!check) return [`no schema for ${key}`];
  return check(doc);
}

// Every document of a YAML text, parsed (a YAML error is thrown).
export function documents(text) {
  return parseAllDocuments(text).map((d) => {
    if (d.errors.length) throw new Error(d.errors.map((e) => e.message).join("; "));
    return d.toJS();
  });
}

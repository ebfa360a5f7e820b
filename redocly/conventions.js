/**
 * Redocly plugin with the lint rules that keep this project's conventions.
 * Rules: https://redocly.com/docs/cli/custom-plugins/custom-rules
 */

/** The marker every modelled element carries in its description. */
const ASSUMPTION_TEXT = '**Assumption:**';
const ENVELOPE_FIELDS = ['code', 'message', 'param', 'doc_url'];

/**
 * Resolves a `$ref` relative to the file the referring node came from, and returns the
 * node with the source to resolve its own references against.
 */
function deref(node, ctx, from) {
  if (node && typeof node === 'object' && '$ref' in node) {
    const resolved = ctx.resolve(node, from);
    return { node: resolved.node, from: resolved.location?.source.absoluteRef ?? from };
  }
  return { node, from };
}

/** True when the schema is `{ error: { code, message, param, doc_url } }`, all required. */
function isEnvelopeSchema(schema, ctx, from) {
  const root = deref(schema, ctx, from);
  if (!root.node?.required?.includes('error')) return false;
  const error = deref(root.node.properties?.error, ctx, root.from).node;
  return Boolean(error) && ENVELOPE_FIELDS.every((f) => error.required?.includes(f) && error.properties?.[f]);
}

function responseUsesEnvelope(response, ctx) {
  const resolved = deref(response, ctx);
  const schema = resolved.node?.content?.['application/json']?.schema;
  return Boolean(schema) && isEnvelopeSchema(schema, ctx, resolved.from);
}

/**
 * Tracks whether the visitor is inside `webhooks` (operations the merchant hosts, which
 * these rules do not govern) and keeps the root's security and schemes.
 */
function withApiOperations(onOperation) {
  const state = { inWebhooks: false, rootSecurity: [], schemes: {} };
  return {
    Root: {
      enter(root) {
        state.rootSecurity = root.security ?? [];
        state.schemes = root.components?.securitySchemes ?? {};
      },
    },
    WebhooksMap: {
      enter() {
        state.inWebhooks = true;
      },
      leave() {
        state.inWebhooks = false;
      },
    },
    Operation: {
      enter(operation, ctx) {
        if (!state.inWebhooks) onOperation(operation, ctx, state);
      },
    },
  };
}

function isExempt(operation, opts) {
  return (opts.exempt ?? []).includes(operation.operationId);
}

/** Every operation but the exemptions requires a bearer scheme and documents 401 with the envelope. */
function OperationRequiresBearer(opts) {
  return withApiOperations((operation, ctx, state) => {
    if (isExempt(operation, opts)) return;
    const requirements = operation.security ?? state.rootSecurity;
    const bearer = requirements.some((req) =>
      Object.keys(req).some((name) => {
        const scheme = deref(state.schemes[name], ctx).node;
        return scheme?.type === 'http' && String(scheme.scheme).toLowerCase() === 'bearer';
      }),
    );
    if (!bearer) {
      ctx.report({
        message: `Operation ${operation.operationId} must require a bearer scheme.`,
        location: ctx.location,
      });
    }
    const unauthorized = operation.responses?.['401'];
    if (!unauthorized || !responseUsesEnvelope(unauthorized, ctx)) {
      ctx.report({
        message: `Operation ${operation.operationId} must document 401 with the error envelope.`,
        location: ctx.location.child(['responses']),
      });
    }
  });
}

/** Every 4xx/5xx response of an operation (but the exemptions) is the error envelope. */
function ErrorResponsesUseEnvelope(opts) {
  return withApiOperations((operation, ctx) => {
    if (isExempt(operation, opts)) return;
    for (const [status, response] of Object.entries(operation.responses ?? {})) {
      if (!/^[45]/.test(status)) continue;
      if (!responseUsesEnvelope(response, ctx)) {
        ctx.report({
          message: `${operation.operationId} ${status} must use the error envelope { error: { code, message, param, doc_url } }.`,
          location: ctx.location.child(['responses', status]),
        });
      }
    }
  });
}

/** Every POST operation (but the exemptions) documents the Idempotency-Key header. */
function CreateDocumentsIdempotencyKey(opts) {
  let pathParameters = [];
  const visitor = withApiOperations((operation, ctx) => {
    if (isExempt(operation, opts) || ctx.key !== 'post') return;
    const params = [...pathParameters, ...(operation.parameters ?? [])].map((p) => deref(p, ctx).node);
    const documented = params.some((p) => p?.in === 'header' && p.name?.toLowerCase() === 'idempotency-key');
    if (!documented) {
      ctx.report({
        message: `Create operation ${operation.operationId} must document the Idempotency-Key header.`,
        location: ctx.location.child(['parameters']),
      });
    }
  });
  visitor.PathItem = {
    enter(pathItem) {
      pathParameters = pathItem.parameters ?? [];
    },
  };
  return visitor;
}

/** `x-assumption: true` and a description saying `**Assumption:**` go together, both ways. */
function AssumptionMarked() {
  const check = (node, ctx) => {
    const marked = node['x-assumption'] === true;
    const says = typeof node.description === 'string' && node.description.includes(ASSUMPTION_TEXT);
    if (marked && !says) {
      ctx.report({
        message: `x-assumption: true needs a description saying ${ASSUMPTION_TEXT} what was modelled.`,
        location: ctx.location.child(['x-assumption']).key(),
      });
    } else if (says && !marked) {
      ctx.report({
        message: `A description saying ${ASSUMPTION_TEXT} needs x-assumption: true beside it.`,
        location: ctx.location.child(['description']),
      });
    } else if ('x-assumption' in node && node['x-assumption'] !== true) {
      ctx.report({ message: 'x-assumption is either true or absent.', location: ctx.location.child(['x-assumption']) });
    }
  };
  const visit = { enter: check };
  return { Operation: visit, Schema: visit, Parameter: visit, Response: visit, Header: visit };
}

/** Every request and response body has an example. */
function MediaTypeHasExample() {
  return {
    MediaType: {
      enter(mediaType, ctx) {
        const schema = deref(mediaType.schema, ctx).node;
        const has =
          mediaType.example !== undefined ||
          Object.keys(mediaType.examples ?? {}).length > 0 ||
          (Array.isArray(schema?.examples) && schema.examples.length > 0);
        if (!has) ctx.report({ message: 'Every request and response body needs an example.', location: ctx.location });
      },
    },
  };
}

export default function conventionsPlugin() {
  return {
    id: 'conventions',
    rules: {
      oas3: {
        'operation-requires-bearer': OperationRequiresBearer,
        'error-responses-use-envelope': ErrorResponsesUseEnvelope,
        'create-documents-idempotency-key': CreateDocumentsIdempotencyKey,
        'assumption-marked': AssumptionMarked,
        'media-type-has-example': MediaTypeHasExample,
      },
    },
  };
}

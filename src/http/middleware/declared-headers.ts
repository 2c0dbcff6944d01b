import type { OpenAPIHono, RouteConfig } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { ZodObject } from 'zod';
import type { AppEnv } from '../env.js';
import { toValidationError } from './validation.js';

/**
 * zod-openapi validates `request.headers` by first copying every request header into an object
 * (measured: ≈ 12 µs of CPU on a ≈ 60 µs `POST /agents/:id/events`). This documents the route
 * unchanged and checks only the headers it declares, with the same schema, the same errors and the
 * same `c.req.valid('header')`. Use it in place of the route: `app.openapi(declaredHeadersOnly(app, route), …)`.
 */
export function declaredHeadersOnly<R extends RouteConfig>(app: OpenAPIHono<AppEnv>, route: R): R {
  const schema = route.request?.headers;
  if (!(schema instanceof ZodObject)) return route;
  // Documented as `app.openapi` documents a route: without its middleware (a list of functions).
  const { middleware: _notDocumented, hide: _hidden, ...documented } = route;
  app.openAPIRegistry.registerPath(documented);
  const names = Object.keys(schema.shape);
  const checkHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
    const sent: Record<string, string> = {};
    for (const name of names) {
      const value = c.req.header(name); // case-insensitive, as the header validator matches them
      if (value !== undefined) sent[name] = value;
    }
    const result = schema.safeParse(sent);
    if (!result.success) throw toValidationError('header', result.error, sent);
    c.req.addValidatedData('header', result.data as Record<string, unknown>);
    await next();
  };
  const { headers: _documentedAbove, ...request } = route.request!;
  const middleware = route.middleware === undefined ? [] : Array.isArray(route.middleware) ? route.middleware : [route.middleware];
  return { ...route, hide: true, request, middleware: [...middleware, checkHeaders] } as R;
}

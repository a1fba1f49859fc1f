/**
 * Requests refused before any route runs, answered with the API's error body so every refusal carries a
 * code: those Node's HTTP parser refuses (a request line or headers over 16 KiB, malformed HTTP; then the
 * connection is closed) and those Fastify's router refuses (a path parameter over its length limit, a URL
 * whose percent-encoding is broken).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { GpuxError } from '@gpux/core';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './errors.js';

/** Fastify's router default (maxParamLength): a longer path parameter never reaches a route. */
const MAX_PARAM_LENGTH = 100;

export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  const long = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
  const message = long ? `a path parameter (an id) is longer than ${MAX_PARAM_LENGTH} characters` : 'the URL is not valid: check its percent-encoding';
  void reply.code(long ? 414 : 400).send(errorBody(new GpuxError('REQUEST_INVALID', message)));
}

export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const message =
    status === 431
      ? 'the request line and headers are larger than the server accepts (16 KiB): send long values in a JSON body'
      : status === 408
        ? 'the request took too long to arrive'
        : 'the request is not valid HTTP';
  const body = JSON.stringify(errorBody(new GpuxError('REQUEST_INVALID', message)));
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

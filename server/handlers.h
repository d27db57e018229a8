/*
 * handlers.h - what answers a request (request.h): the status endpoint and
 * the document root.  Each returns 0 (the response is appended to
 * request_out), an error status, or ZH_WAIT.
 */
#ifndef ZC_HANDLERS_H
#define ZC_HANDLERS_H

#include <stdbool.h>

#include "http_parser.h"
#include "request.h"

struct zh_worker;

/* status.c */
bool status_matches(const struct zh_worker *w, const struct http_request *req);
int status_serve(struct zh_request *r);

/* static.c: GET and HEAD from the document root, through the cache; a
 * miss waits for a helper thread when the worker has some. */
int static_serve(struct zh_request *r);

#endif

/*
 * handlers.h - what answers a request (request.h): the status endpoint and
 * the document root (fastcgi.h: FastCGI applications), as the router's
 * table calls them (router.c).  Each returns a zh_answer: ZH_ANSWERED (the
 * response is appended to request_out), zh_status(S) (an error page), or
 * ZH_WAITING.
 */
#ifndef ZC_HANDLERS_H
#define ZC_HANDLERS_H

#include <stdbool.h>

#include "http_parser.h"
#include "request.h"

struct zh_worker;

/* status.c */
bool status_matches(const struct zh_worker *w, const struct http_request *req);
zh_answer status_serve(struct zh_request *r);

/* static.c: GET and HEAD from the document root, through the cache; a
 * miss waits for a helper thread when the worker has some. */
zh_answer static_serve(struct zh_request *r);

#endif

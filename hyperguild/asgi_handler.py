"""Django's ASGI handler with the middleware run as one synchronous chain, a few requests at a time.

Django's own ASGIHandler builds an *async* middleware chain. Every middleware here
is synchronous at heart (ours, Django's MiddlewareMixin ones, django-axes, django-csp),
so in that chain each one hops to a worker thread and back for its request and
response hooks: about twenty thread hand-overs per request, measured at 8.9 ms for an
MCP `ping` against 0.7 ms for the same request through the WSGI handler.

This handler loads the synchronous chain instead and enters it once per request,
on the request's own thread (`thread_sensitive`, as Django does for sync views),
so database connections are still used only by the thread that opened them. That
thread is borrowed from a pool of idle ones (`RequestThreads`) instead of started
and joined for every request, as asgiref does by default.
Reading the body, disconnect handling and streaming responses (the SSE answers
of long tool calls) stay Django's async code. At most HYPERGUILD_WEB_CONCURRENCY
requests run a chain at once (`hyperguild.lib.admission`).

`/mcp/*` requests take a shorter chain, HYPERGUILD_MCP_MIDDLEWARE (the request guard
and the security headers): they carry a bearer token, never a cookie, so sessions,
CSRF, logins (django-axes), messages and the browser-only headers have nothing to do
there, and skipping them is a measurable share of a `brain_query`.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.urls import set_script_prefix

from hyperguild.lib import balance


class RequestThreads:
    """Single-thread executors, one lent to each request for its synchronous code.

    An executor comes back only when every call queued on it has finished (its last
    job puts it back), so a call that outlives its request (the client went away)
    never delays the next borrower; at most `keep_idle` executors wait idle.
    """

    def __init__(self, keep_idle: int = 64) -> None:
        self.keep_idle = keep_idle
        self.idle: list[ThreadPoolExecutor] = []
        self.lock = threading.Lock()

    def borrow(self) -> ThreadPoolExecutor:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        executor.submit(self._idle, executor)

    def _idle(self, executor: ThreadPoolExecutor) -> None:
        with self.lock:
            if len(self.idle) < self.keep_idle:
                self.idle.append(executor)
                return
        executor.shutdown(wait=False)


def balanced(send):
    """`send`, adding `Connection: close` to the answer when this process holds more than its share of connections."""

    async def send_balanced(message):
        if message["type"] == "http.response.start" and balance.should_close():
            message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
        await send(message)

    return send_balanced


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.threads = RequestThreads()

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.threads.borrow()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, balanced(send) if balance.installed() else send)
        finally:
            self.threads.give_back(executor)

    async def handle(self, scope, receive, send):
        """Django's `handle` with one trip to the request's thread instead of three.

        Django sends `request_started` (its receivers are synchronous), runs the view and
        closes the response (`request_finished`) in three separate hops to a thread. Here
        the thread does all three for an ordinary response, which is complete in memory
        before a byte is sent. A streaming response (a tool call's progress as SSE) is
        sent as Django sends it: while listening for the client to go away, which closes
        the stream and cancels the call, then closed on the thread.
        """
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            set_script_prefix(get_script_prefix(scope))
            response = await sync_to_async(self._respond, thread_sensitive=True)(scope, body_file)
            if not response.streaming:
                await self.send_response(response, send)
                return
            await self._send_streaming(response, receive, send)
        finally:
            body_file.close()

    def _respond(self, scope, body_file):
        """On the request's thread: `request_started`, the view, and (not streaming) `request_finished`."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
        if not response.streaming:
            response.close()  # its content is in memory already; this sends request_finished
        return response

    async def _send_streaming(self, response, receive, send):
        sending = asyncio.create_task(self.send_response(response, send))
        listening = asyncio.create_task(self.listen_for_disconnect(receive))
        await asyncio.wait([sending, listening], return_when=asyncio.FIRST_COMPLETED)
        for task in (listening, sending):  # the listener first: it never raises what would stop the cancelling
            if not task.done():
                task.cancel()
            try:
                await task
            except (asyncio.CancelledError, RequestAborted):
                pass  # the client went away: the stream's generator is closed, which stops the call
        await sync_to_async(response.close, thread_sensitive=True)()

    async def get_response_async(self, request):
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)

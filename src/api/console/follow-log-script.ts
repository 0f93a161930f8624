// The run page's follower (docs/api.md "Console"): the run page follows the run's log live through the events of
// GET {wallet_url}/runs/{run_id}/log-events (the same stream as the API's ?follow=1), and its structured events
// through GET {wallet_url}/runs/{run_id}/run-events (the API's GET …/events). Each line is appended as text (never
// markup) to the page's role="log" regions, which screen readers announce politely; the status line says whether it
// is following, reconnecting, or how the run ended. The page works without it: it shows the log and events so far.
import { createHash } from 'node:crypto';

export const FOLLOW_LOG_SCRIPT = `(function () {
  var events = document.getElementById('events');
  if (events && events.getAttribute('data-follow') && window.EventSource) {
    var eventSource = new EventSource(events.getAttribute('data-follow'));
    eventSource.addEventListener('run_event', function (message) {
      var event = JSON.parse(message.data);
      var line = document.createElement('div');
      line.textContent = '[' + (event.name === null ? event.type : event.type + ':' + event.name) + '] ' + JSON.stringify(event.data);
      events.appendChild(line);
      var none = document.getElementById('events-empty');
      if (none) none.parentNode.removeChild(none);
    });
    eventSource.addEventListener('end', function () { eventSource.close(); });
  }
  var log = document.getElementById('log');
  var status = document.getElementById('log-status');
  if (!log || !status || !log.getAttribute('data-follow') || !window.EventSource) return;
  var source = new EventSource(log.getAttribute('data-follow'));
  var say = function (text) { if (status.textContent !== text) status.textContent = text; };
  say('Following the log live.');
  source.onopen = function () { say('Following the log live.'); };
  source.addEventListener('log', function (event) {
    var entry = JSON.parse(event.data);
    var atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    var line = document.createElement('div');
    line.className = entry.stream;
    line.textContent = entry.text;
    log.appendChild(line);
    var empty = document.getElementById('log-empty');
    if (empty) empty.parentNode.removeChild(empty);
    if (atEnd) log.scrollTop = log.scrollHeight;
  });
  source.addEventListener('end', function (event) {
    source.close();
    var end = JSON.parse(event.data);
    var shown = document.getElementById('run-status');
    if (shown) { shown.textContent = end.status; shown.className = 'status-' + end.status; }
    say('The run ended ' + end.status + (end.error ? ' (' + end.error + ')' : '') + (end.truncated ? '; its log reached its cap' : '') + '. Reload the page for its output and artifacts.');
  });
  source.onerror = function () {
    say(source.readyState === EventSource.CLOSED ? 'The log stopped following. Reload the page to follow it again.' : 'Reconnecting to the log.');
  };
})();`;

/** Its CSP source: the run page's policy allows this script besides the local times (local-time-script.ts), no other. */
export const FOLLOW_LOG_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(FOLLOW_LOG_SCRIPT).digest('base64')}'`;

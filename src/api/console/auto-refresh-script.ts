// The runs page while some run on it is queued or running (docs/api.md "Console"): it reloads itself every few
// seconds, as Buildkite's and GitHub Actions' lists move on their own, and stops once none is in flight (the page
// then comes without the script). Not <meta http-equiv=refresh>: that reloads while a person fills the filter form,
// and axe-core's meta-refresh rule (WCAG 2.2.1) refuses it. This waits while the page is hidden or the focus is in a
// form, and the page says so with a link that turns it off (?refresh=off).
import { createHash } from 'node:crypto';

export const AUTO_REFRESH_SECONDS = 10;

export const AUTO_REFRESH_SCRIPT = `(function () {
  var note = document.getElementById('auto-refresh');
  var seconds = Number(note && note.getAttribute('data-refresh-seconds'));
  if (!seconds) return;
  var tick = function () {
    var focus = document.activeElement;
    if (document.hidden || (focus && focus.closest && focus.closest('form'))) { setTimeout(tick, seconds * 1000); return; }
    location.reload();
  };
  setTimeout(tick, seconds * 1000);
})();`;

/** Its CSP source, in the runs page's policy only while the page carries it. */
export const AUTO_REFRESH_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(AUTO_REFRESH_SCRIPT).digest('base64')}'`;

// The console's times for the person reading them (docs/api.md "Console"): the server renders each as
// <time datetime="…Z">YYYY-MM-DD HH:MM UTC</time> (format.ts), which is what a browser without script shows. This
// script, inline in every console page (layout.ts) and allowed by its hash (security.ts), rewrites each one: relative
// ("3 min ago") within a day, else the date and time in the browser's own zone, and the UTC time on hover (title).
// It reads only the attribute the server wrote and writes text, never markup; it refreshes the relative ones each
// half minute, so a page left open does not go on saying "just now".
import { createHash } from 'node:crypto';

export const LOCAL_TIME_SCRIPT = `(function () {
  var pad = function (n) { return (n < 10 ? '0' : '') + n; };
  var zone = function (at) {
    try {
      var part = new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' }).formatToParts(at).filter(function (p) { return p.type === 'timeZoneName'; })[0];
      return part ? ' ' + part.value : '';
    } catch (e) { return ''; }
  };
  var local = function (at) {
    return at.getFullYear() + '-' + pad(at.getMonth() + 1) + '-' + pad(at.getDate()) + ' ' + pad(at.getHours()) + ':' + pad(at.getMinutes()) + zone(at);
  };
  var utc = function (at) { return at.toISOString().slice(0, 19).replace('T', ' ') + ' UTC'; };
  var relative = function (seconds) {
    var past = seconds >= 0, s = Math.abs(seconds);
    if (s < 45) return past ? 'just now' : 'in a moment';
    var text = s < 3600 ? Math.round(s / 60) + ' min' : Math.round(s / 3600) + ' h';
    return past ? text + ' ago' : 'in ' + text;
  };
  var show = function () {
    var now = Date.now();
    var times = document.querySelectorAll('time[datetime]');
    for (var i = 0; i < times.length; i += 1) {
      var node = times[i];
      var at = new Date(node.getAttribute('datetime'));
      if (isNaN(at.getTime())) continue;
      var seconds = (now - at.getTime()) / 1000;
      var recent = Math.abs(seconds) < 86400;
      var text = recent ? relative(seconds) : local(at);
      if (node.textContent !== text) node.textContent = text;
      node.title = recent ? local(at) + ' (' + utc(at) + ')' : utc(at);
    }
  };
  show();
  setInterval(show, 30000);
})();`;

/** Its CSP source: every page of the wallet's scope allows this script by its hash (security.ts). */
export const LOCAL_TIME_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(LOCAL_TIME_SCRIPT).digest('base64')}'`;

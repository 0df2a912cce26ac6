import type { preferences } from '../domain/marketing/engagement.ts';
import { esc } from './html.ts';

/**
 * The preference page's markup (`GET /u/{token}`, and the answer to its form): who sends (the
 * project's name and the message's From), the project's public topics each with a switch, the
 * campaign's lists to leave, and "unsubscribe from all marketing". Plain forms posting to the
 * same URL: it works without JavaScript, and the page's policy runs none.
 */

type Prefs = NonNullable<Awaited<ReturnType<typeof preferences>>>;

/** A form of one button posting `scope` to the page's own URL. */
export function scopeForm(token: string, scope: string, label: string): string {
  return `<form method="post" action="/u/${esc(token)}"><input type="hidden" name="scope" value="${esc(scope)}"><button type="submit">${esc(label)}</button></form>`;
}

/**
 * One switch per topic: a hidden `off` before the checkbox's `on` under the same name, so a switch
 * turned off is sent too (the last value wins) and topics not shown are told apart.
 */
function topicsForm(token: string, prefs: Prefs): string {
  const rows = prefs.topics.map((t) => {
    const name = `topic_${t.id}`;
    const mine = prefs.topic?.id === t.id ? ' <span class="muted">(this email)</span>' : '';
    const about = t.description ? `<br><span class="muted">${esc(t.description)}</span>` : '';
    return `<input type="hidden" name="${esc(name)}" value="off"><label class="check"><input type="checkbox" name="${esc(name)}" value="on"${t.subscribed ? ' checked' : ''}><span><strong>${esc(t.name)}</strong>${mine}${about}</span></label>`;
  });
  return `<form method="post" action="/u/${esc(token)}"><input type="hidden" name="scope" value="topics"><fieldset><legend>What you receive</legend>${rows.join('')}</fieldset><button type="submit">Save my choices</button></form>`;
}

function senderLine(prefs: Prefs): string {
  if (!prefs.project) return '';
  return `<p class="muted">Emails from <strong>${esc(prefs.project)}</strong>${prefs.from ? `, sent by ${esc(prefs.from)}` : ''}</p>`;
}

/** The page's body for a reader: their topics and choices, or Resubscribe once they left all. */
export function preferenceBody(token: string, prefs: Prefs, notice?: string): string {
  const status = notice ? `<p role="status"><strong>${esc(notice)}</strong></p>` : '';
  if (!prefs.subscribed)
    return `${senderLine(prefs)}${status}<p>${esc(prefs.email)} is unsubscribed from marketing emails from this sender.</p>${scopeForm(token, 'resubscribe', 'Resubscribe')}`;
  const lists =
    prefs.lists.length > 0 ? `, and this email because of the list ${prefs.lists.map(esc).join(', ')}` : '';
  const leaveLists =
    prefs.lists.length > 0
      ? scopeForm(token, 'list', prefs.lists.length > 1 ? 'Leave these lists' : 'Leave this list')
      : '';
  return `${senderLine(prefs)}${status}<p>${esc(prefs.email)} receives marketing emails from this sender${lists}.</p>${prefs.topics.length > 0 ? topicsForm(token, prefs) : ''}${leaveLists}${scopeForm(token, 'all', 'Unsubscribe from all marketing emails')}`;
}

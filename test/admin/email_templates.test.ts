import test from 'ava';
import { EmailTemplates, EMAIL_TEMPLATE_EVENTS, openAdminStores, type EmailRenderData } from '../../admin/index.ts';
import { mainBackends, openTestMain } from '../helpers/main_databases.ts';
import type { LatchkeyError } from '../../engine/errors.ts';

const data: EmailRenderData = {
  user: { id: 'u1', email: 'ann@example.com', given_name: '<Ann>' },
  organization: { name: 'Acme', logo: '' },
  verification_url: 'https://app.example.com/verify?token=t&x=1',
  otp: '424242',
};

for (const backend of mainBackends()) {
  test(`email templates: one per event, validated, used instead of the default, default after delete (${backend})`, async (t) => {
    const m = await openTestMain(backend);
    try {
      const templates = new EmailTemplates({ store: (await openAdminStores(m.database)).templates });
      // Every event has a built-in default that renders.
      for (const event of EMAIL_TEMPLATE_EVENTS) {
        const mail = await templates.render(event, data);
        t.true(mail.subject.length > 0, event);
        t.true(mail.html.includes('Acme'), event);
      }
      const def = await templates.render('forgot_password', data);
      t.true(def.html.includes('https://app.example.com/verify?token=t&#38;x=1'));
      t.true((await templates.render('verify_otp', data)).html.includes('424242'));

      const added = await templates.add({
        event_name: 'forgot_password',
        subject: 'Reset for {{ user.email }}',
        template: '<p>Hi {{ .user.given_name }}, go to {{ verification_url }}</p>',
      });
      t.is(added.event_name, 'forgot_password');
      const custom = await templates.render('forgot_password', data);
      t.is(custom.subject, 'Reset for ann@example.com');
      t.is(custom.html, '<p>Hi &#60;Ann&#62;, go to https://app.example.com/verify?token=t&#38;x=1</p>');

      const dup = await t.throwsAsync(templates.add({ event_name: 'forgot_password', subject: 's', template: 't' }));
      t.is((dup as LatchkeyError).code, 'already_exists');
      const bad1 = await t.throwsAsync(templates.add({ event_name: 'verify_otp', subject: 's', template: '{{ secrets.admin }}' }));
      t.is((bad1 as LatchkeyError).reason, 'invalid_template');
      const bad2 = await t.throwsAsync(templates.add({ event_name: 'verify_otp', subject: 's', template: 'code {{ otp ' }));
      t.is((bad2 as LatchkeyError).reason, 'invalid_template');
      const bad3 = await t.throwsAsync(templates.add({ event_name: 'nope', subject: 's', template: 't' }));
      t.is((bad3 as LatchkeyError).reason, 'invalid_event_name');
      const bad4 = await t.throwsAsync(templates.add({ event_name: 'verify_otp', subject: '', template: 't' }));
      t.is((bad4 as LatchkeyError).reason, 'invalid_template');

      const second = await templates.add({ event_name: 'verify_otp', subject: 'Code', template: '{{otp}}' });
      const moved = await t.throwsAsync(templates.update({ id: second.id, event_name: 'forgot_password' }));
      t.is((moved as LatchkeyError).code, 'already_exists');
      const updated = await templates.update({ id: second.id, template: 'Your code: {{ otp }}' });
      t.is(updated.template, 'Your code: {{ otp }}');
      t.is((await templates.render('verify_otp', data)).html, 'Your code: 424242');
      const listed = await templates.list({ limit: 1 });
      t.deepEqual(listed.pagination, { page: 1, limit: 1, offset: 0, total: 2 });
      await templates.delete(added.id);
      t.true((await templates.render('forgot_password', data)).subject === 'Reset your password');
      const missing = await t.throwsAsync(templates.delete(added.id));
      t.is((missing as LatchkeyError).code, 'not_found');
      // Moving a template to a free event keeps its id and creation time.
      const movedOk = await templates.update({ id: second.id, event_name: 'invite_member' });
      t.like(movedOk, { id: second.id, event_name: 'invite_member', created_at: second.created_at });
      t.is((await templates.render('invite_member', data)).html, 'Your code: 424242');
      t.true((await templates.render('verify_otp', data)).subject !== 'Code', 'the old event is back on its default');
      // Ten admins adding a template for one event at once: one is stored, the others get already_exists.
      const racing = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) => templates.add({ event_name: 'magic_link_login', subject: `s${i}`, template: 't' })),
      );
      t.is(racing.filter((r) => r.status === 'fulfilled').length, 1);
      t.true(racing.every((r) => r.status === 'fulfilled' || (r.reason as LatchkeyError).code === 'already_exists'));
      t.is((await templates.list()).pagination.total, 2);
    } finally {
      await m.close();
    }
  });
}

for (const backend of mainBackends()) {
  test(`email templates per language: the recipient's language first, then the template for every language, then the built-in default in that language (${backend})`, async (t) => {
    const m = await openTestMain(backend);
    try {
      const templates = new EmailTemplates({ store: (await openAdminStores(m.database)).templates });
      // Nothing stored: the built-in default in the language, English for a language without one.
      t.is((await templates.render('forgot_password', data, 'de')).subject, 'Setzen Sie Ihr Passwort zurück');
      t.is((await templates.render('forgot_password', data, 'sw')).subject, 'Reset your password');
      const de = await templates.add({ event_name: 'forgot_password', language: 'DE', subject: 'Neues Passwort für {{ user.email }}', template: '<p>Hallo {{ user.given_name }}</p>' });
      t.is(de.language, 'de', 'the language is stored lower-cased');
      t.is((await templates.render('forgot_password', data, 'de')).subject, 'Neues Passwort für ann@example.com');
      // Another language still gets its built-in default while no template for every language exists.
      t.is((await templates.render('forgot_password', data, 'fr')).subject, 'Réinitialisez votre mot de passe');
      const every = await templates.add({ event_name: 'forgot_password', subject: 'Reset (custom)', template: '<p>custom</p>' });
      t.is(every.language, '');
      t.is((await templates.render('forgot_password', data, 'fr')).subject, 'Reset (custom)', 'the template for every language comes before the built-in French');
      t.is((await templates.render('forgot_password', data, 'de')).subject, 'Neues Passwort für ann@example.com', 'German keeps its own');
      t.is((await templates.render('forgot_password', data)).subject, 'Reset (custom)');
      // One template per event and language.
      const dup = await t.throwsAsync(templates.add({ event_name: 'forgot_password', language: 'de', subject: 's', template: 't' }));
      t.is((dup as LatchkeyError).reason, 'email_template_exists');
      const fr = await templates.add({ event_name: 'forgot_password', language: 'fr', subject: 'Mot de passe (perso)', template: 't' });
      const clash = await t.throwsAsync(templates.update({ id: fr.id, language: 'de' }));
      t.is((clash as LatchkeyError).reason, 'email_template_exists');
      const bad = await t.throwsAsync(templates.add({ event_name: 'verify_otp', language: 'de-AT', subject: 's', template: 't' }));
      t.is((bad as LatchkeyError).reason, 'invalid_language');
      // Moving a template to another language frees the old one.
      const moved = await templates.update({ id: fr.id, language: 'es' });
      t.like(moved, { id: fr.id, language: 'es', created_at: fr.created_at });
      t.is((await templates.render('forgot_password', data, 'es')).subject, 'Mot de passe (perso)');
      t.is((await templates.render('forgot_password', data, 'fr')).subject, 'Reset (custom)');
      // Deleting the German one: German mail falls back to the template for every language.
      await templates.delete(de.id);
      t.is((await templates.render('forgot_password', data, 'de')).subject, 'Reset (custom)');
      t.deepEqual((await templates.list()).email_templates.map((x) => x.language).sort(), ['', 'es']);
    } finally {
      await m.close();
    }
  });
}

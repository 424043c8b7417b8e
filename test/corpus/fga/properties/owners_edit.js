// Every owner of a document is one of its editors; returns the check that shows otherwise.
export default async function ownersEdit(store) {
  for (const object of store.objects('document')) {
    for (const user of store.users) {
      if ((await store.check(user, 'owner', object)) && !(await store.check(user, 'editor', object))) {
        return { user, relation: 'editor', object, expected: true };
      }
    }
  }
  return true;
}

import { useRouter } from '@tanstack/react-router';
import { type RefObject, useEffect } from 'react';

// the path of the last page title shown: another one means the person moved inside the app
let lastPath: string | undefined;

/**
 * Moves the keyboard focus to a new page's title when it appears after a navigation inside the app
 * (not on the first load), so a screen reader announces the new page and the next Tab starts at its
 * top. It runs when the title mounts: the page being left still renders for a moment with the new
 * location, and must not take the focus.
 */
export function useFocusOnNavigation(title: RefObject<HTMLHeadingElement | null>) {
  const router = useRouter();
  useEffect(() => {
    const pathname = router.state.location.pathname;
    if (lastPath !== undefined && lastPath !== pathname) title.current?.focus();
    lastPath = pathname;
  }, [router, title]);
}

import { createContext, type ReactNode, useContext, useState } from 'react';
import type { Session, SessionProject } from './api/endpoints.ts';

const STORAGE_KEY = 'posthorn.project';

interface ProjectChoice {
  project: SessionProject;
  session: Session;
  choose(projectId: string): void;
}

const ProjectContext = createContext<ProjectChoice | null>(null);

/** Makes a project the one the next signed-in page opens in (an accepted invitation's, say). */
export function rememberProject(projectId: string) {
  try {
    localStorage.setItem(STORAGE_KEY, projectId);
  } catch {
    // private mode: the choice lasts for this page only
  }
}

function remembered(): string | null {
  try {
    return localStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

/** The project the screens act in: the one chosen last in this browser, else the first. */
export function ProjectProvider({ session, children }: { session: Session; children: ReactNode }) {
  const [chosen, setChosen] = useState<string | null>(remembered);
  const project = session.projects.find((p) => p.id === chosen) ?? session.projects[0];
  if (!project) return <>{children}</>;
  const choose = (projectId: string) => {
    setChosen(projectId);
    rememberProject(projectId);
  };
  return <ProjectContext.Provider value={{ project, session, choose }}>{children}</ProjectContext.Provider>;
}

/** The current project and the signed-in session; only inside the signed-in shell. */
export function useProject(): ProjectChoice {
  const choice = useContext(ProjectContext);
  if (!choice) throw new Error('useProject outside a signed-in page');
  return choice;
}

/** Owners and Admins manage keys, domains and members; Members read and send. */
export function canManage(project: SessionProject): boolean {
  return project.role === 'owner' || project.role === 'admin';
}
